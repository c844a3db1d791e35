import { once } from 'node:events'
import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats, withSim } from '../support/sim.js'
import { spawnProxy } from '../support/process.js'
import { send, until } from '../support/http.js'

const SEARCH = 'POST /accounts/search' // limit 1
const search = (extra: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { authorization: basicAuth('org1'), ...extra },
  body: '{}',
})

describe('SIGTERM: at shutdown.drainMs the still queued get 503 + Retry-After, the in-flight finish', () => {
  it('refuses the queued at the drain deadline and lets the held request finish', async () => {
    const sim = await withSim()
    const proxy = await spawnProxy({
      SLUICE_UPSTREAM: sim.apiUrl,
      SLUICE_SHUTDOWN_DRAIN_MS: '300',
      SLUICE_SHUTDOWN_GRACE_MS: '30000',
    })
    const inFlight = send(proxy.url, '/v2/accounts/search', search({ 'x-sim-hold': 'first' }))
    await until(() => keyStats(sim, 'org1', SEARCH)?.inProgress === 1, 'one request upstream')
    const queued = [send(proxy.url, '/v2/accounts/search', search()), send(proxy.url, '/v2/accounts/search', search())]
    await until(async () => {
      const status = (await (await fetch(`${proxy.adminUrl}/status`)).json()) as { keys: { queued: number }[] }
      return status.keys[0]?.queued === 2
    }, 'two queued')

    const exited = once(proxy.child, 'exit') as Promise<[number | null]>
    proxy.child.kill('SIGTERM')
    // the request upstream is held at the sim's gate until both queued answers are in: they cannot have been served
    for (const answer of await Promise.all(queued)) {
      expect(answer.status).toBe(503)
      expect(Number(answer.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect(answer.json()).toEqual([{ code: 'SLUICE_UNAVAILABLE', message: 'sluice is shutting down' }])
    }
    expect(proxy.child.exitCode).toBeNull()
    sim.open('first')
    expect((await inFlight).status).toBe(200)
    const [code] = await exited
    expect(code).toBe(0)
    expect(keyStats(sim, 'org1', SEARCH)).toMatchObject({ requests: 1, inProgress: 0 })
    expect(proxy.output()).toContain('"shutdown: requests still open at shutdown.drainMs; the queued are answered 503"')
  }, 60_000)
})
