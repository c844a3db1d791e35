import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send } from '../support/http.js'
import { basic, startProxy, type RunningProxy } from '../support/proxy.js'
import { startSim, type Sim } from '../support/sim.js'

// The app token header never reaches the API, whether app identity is on or off: an app may send its
// token before identity is turned on, or after a rollback turned it off (README "Apps: identity,
// access and keys"). The sim echoes the headers it received.

const TOKEN = 'app-token-sent-early-4b9e2c71'

let sim: Sim
const proxies: RunningProxy[] = []
beforeAll(async () => {
  sim = await startSim({ latencyMs: 0 })
  proxies.push(await startProxy({ upstream: sim.apiUrl }))
  proxies.push(await startProxy({ upstream: sim.apiUrl, apps: { tokenHeader: 'X-Team-Token' } }))
})
afterAll(async () => {
  for (const p of proxies) await p.close()
  await sim?.close()
})

/** the headers the upstream received */
async function upstreamHeaders(proxy: RunningProxy, headers: Record<string, string>): Promise<Record<string, unknown>> {
  const answer = await send(proxy.url, '/v2/accounts/42', { headers: { authorization: basic('1001'), ...headers } })
  expect(answer.status).toBe(200)
  return answer.json<{ headers: Record<string, unknown> }>().headers
}

describe('with app identity off', () => {
  it('the app token header (x-sluice-app-token by default) is removed before forwarding; the rest goes on', async () => {
    const got = await upstreamHeaders(proxies[0]!, { 'x-sluice-app-token': TOKEN, 'x-other': 'kept' })
    expect(got['x-sluice-app-token']).toBeUndefined()
    expect(got['x-other']).toBe('kept')
    expect(got.authorization).toBe(basic('1001'))
    expect(JSON.stringify(got)).not.toContain(TOKEN)
  })

  it('so is the header apps.tokenHeader names', async () => {
    const got = await upstreamHeaders(proxies[1]!, { 'x-team-token': TOKEN })
    expect(got['x-team-token']).toBeUndefined()
    expect(JSON.stringify(got)).not.toContain(TOKEN)
  })
})
