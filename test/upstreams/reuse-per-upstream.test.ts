import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, keyStats, startSim, type Sim } from '../support/sim.js'
import { send, until } from '../support/http.js'

/*
 * Two upstreams never share answers (docs/reuse.md, "The key"; docs/upstreams.md, "Keys"): the same
 * read of the same organisation id on production and on trial is two calls, each to its own host.
 */

let production: Sim
let trial: Sim
let proxy: RunningProxy
beforeAll(async () => {
  production = await startSim()
  trial = await startSim()
  proxy = await startProxy({
    upstream: production.apiUrl,
    requestLog: false,
    coalesce: { enabled: true },
    upstreams: [{ name: 'trial', prefix: '/trial/v2', url: trial.apiUrl, profile: 'neon-v2' }],
  })
})
afterAll(async () => {
  await proxy.close()
  await production.close()
  await trial.close()
})

describe('reuse is per upstream', () => {
  it('an identical read in flight on production does not answer the same read on trial', async () => {
    const read = (gate: string) => ({ headers: { authorization: basicAuth('1001'), 'x-sim-hold': gate } })
    const first = send(proxy.url, '/v2/accounts/7/contacts', read('same'))
    await until(() => keyStats(production, '1001', 'GET /accounts/{id}/contacts')?.inProgress === 1, 'production to have the read')
    // the same read on production now would follow the call in flight (coalesced); on trial it must not
    const onTrial = send(proxy.url, '/trial/v2/accounts/7/contacts', read('same'))
    await until(() => keyStats(trial, '1001', 'GET /accounts/{id}/contacts')?.inProgress === 1, 'trial to get its own call')
    production.open('same')
    trial.open('same')
    const [p, t] = await Promise.all([first, onTrial])
    expect([p.status, t.status]).toEqual([200, 200])
    expect(p.headers['x-sluice-coalesced']).toBeUndefined()
    expect(t.headers['x-sluice-coalesced']).toBeUndefined()
    expect(keyStats(production, '1001', 'GET /accounts/{id}/contacts')?.requests).toBe(1)
    expect(keyStats(trial, '1001', 'GET /accounts/{id}/contacts')?.requests).toBe(1)
  })
})
