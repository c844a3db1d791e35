import { describe, expect, it, onTestFinished } from 'vitest'
import { send, until, type Answer } from '../support/http.js'
import { startProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { HEAVY_FOLLOWERS } from '../../src/reuse/index.js'
import { echoUpstream } from './echo-upstream.js'
import { COUNTRIES, reuseStatus } from './support.js'

// docs/reuse.md, "Identical requests in a load test": when identical GETs pile onto one upstream call
// (a load test of one URL), sluice says so once, with the app and the endpoint, never again.

const warnings = (logs: Record<string, unknown>[]): Record<string, unknown>[] =>
  logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('identical GETs are being coalesced heavily'))

describe('heavy coalescing is logged once', () => {
  it(`${HEAVY_FOLLOWERS} followers of one call: one warning naming the app and endpoint; a second burst adds none`, async () => {
    const upstream = await echoUpstream()
    const proxy = await startProxy({ upstream: upstream.apiUrl, requestLog: false })
    onTestFinished(() => proxy.close())
    const headers = { authorization: basicAuth('org1', 'k'), 'x-sluice-app': 'loadtest' }
    for (let burst = 0; burst < 2; burst++) {
      upstream.hold()
      const first = send(proxy.url, COUNTRIES, { headers })
      await until(() => upstream.held === 1, 'the leader reaches the upstream')
      const followers: Promise<Answer>[] = Array.from({ length: HEAVY_FOLLOWERS }, () =>
        send(proxy.url, COUNTRIES, { headers }),
      )
      await until(
        async () => (await reuseStatus(proxy)).coalescing.followers === HEAVY_FOLLOWERS,
        'every other request follows the leader',
      )
      upstream.release()
      const answers = await Promise.all([first, ...followers])
      expect(answers.map((a) => a.status)).toEqual(Array(HEAVY_FOLLOWERS + 1).fill(200))
    }
    const told = warnings(proxy.logs)
    expect(told).toHaveLength(1)
    expect(told[0]).toMatchObject({
      level: 40,
      followers: HEAVY_FOLLOWERS,
      app: 'loadtest',
      endpoint: 'GET /properties/countries',
    })
  })
})
