import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminJson, startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, keyStats, startSim, type Sim } from '../support/sim.js'
import { send, until } from '../support/http.js'

/*
 * The CRM's trial environment is one entry with the built-in profile (docs/upstreams.md): the same
 * catalog and limits, its own host, and its own keys, so the same organisation id on production and
 * on trial is two sets of permits.
 */

interface Key {
  upstream?: string
  instance: string
  endpoint: string
  inFlight: number
  queued: number
  limit: number
}

let production: Sim
let trial: Sim
let proxy: RunningProxy
beforeAll(async () => {
  production = await startSim()
  trial = await startSim()
  proxy = await startProxy({
    upstream: production.apiUrl,
    requestLog: true,
    upstreams: [{ name: 'trial', prefix: '/trial/v2', url: trial.apiUrl, profile: 'neon-v2' }],
  })
})
afterAll(async () => {
  await proxy.close()
  await production.close()
  await trial.close()
})

const search = (gate: string): { method: string; headers: Record<string, string>; body: string } => ({
  method: 'POST',
  headers: { authorization: basicAuth('1001'), 'x-sim-hold': gate },
  body: '{}',
})

describe('the trial environment as the neon-v2 profile', () => {
  it('one org id on production and on trial holds a permit on each at once; /status names the upstream', async () => {
    // POST /accounts/search allows 1 in progress: shared keys would queue the second request.
    const onProduction = send(proxy.url, '/v2/accounts/search', search('p'))
    const onTrial = send(proxy.url, '/trial/v2/accounts/search', search('t'))
    await until(() => keyStats(production, '1001', 'POST /accounts/search')?.inProgress === 1 && keyStats(trial, '1001', 'POST /accounts/search')?.inProgress === 1, 'both to be in progress')

    const { keys } = await adminJson<{ keys: Key[] }>(proxy, '/status')
    const search1001 = keys.filter((k) => k.endpoint === 'POST /accounts/search').sort((a, b) => (a.upstream ?? '').localeCompare(b.upstream ?? ''))
    expect(search1001).toMatchObject([
      { instance: '1001', inFlight: 1, queued: 0, limit: 1 },
      { upstream: 'trial', instance: '1001', inFlight: 1, queued: 0, limit: 1 },
    ])
    expect(search1001[0]).not.toHaveProperty('upstream')

    production.open('p')
    trial.open('t')
    const [p, t] = await Promise.all([onProduction, onTrial])
    expect(p.status).toBe(200)
    expect(t.status).toBe(200)
    // the trial host got the path below its own root, as production does
    expect(t.json()).toMatchObject({ path: '/accounts/search', instance: '1001' })
    const line = proxy.logs.find((l) => l.msg === 'request' && l.upstream === 'trial')
    expect(line).toMatchObject({ instance: '1001', endpoint: 'POST /accounts/search', status: 200 })
  })

  it('the trial prefix has the CRM catalog and limits: a second search on trial waits for the first', async () => {
    const first = send(proxy.url, '/trial/v2/accounts/search', search('t2'))
    await until(() => keyStats(trial, '1001', 'POST /accounts/search')?.inProgress === 1, 'the first to be in progress')
    const second = send(proxy.url, '/trial/v2/accounts/search', search('t2'))
    await until(async () => (await adminJson<{ keys: Key[] }>(proxy, '/status')).keys.some((k) => k.upstream === 'trial' && k.queued === 1), 'the second to queue')
    trial.open('t2')
    expect((await first).status).toBe(200)
    expect((await second).status).toBe(200)
    expect(keyStats(trial, '1001', 'POST /accounts/search')).toMatchObject({ maxInProgress: 1, rejected429: 0 })
  })
})
