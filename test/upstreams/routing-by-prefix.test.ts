import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, keyStats, startSim, type Sim } from '../support/sim.js'
import { send } from '../support/http.js'

/*
 * A path goes to the upstream whose prefix it lies below, matched as the CRM's `/v2` is (letter case
 * ignored, doubled leading slashes tolerated); a path below no prefix is the CRM's 404.
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
    upstreams: [{ name: 'trial', prefix: '/trial/v2', url: trial.apiUrl, profile: 'neon-v2' }],
  })
})
afterAll(async () => {
  await proxy.close()
  await production.close()
  await trial.close()
})

const search = (path: string) => send(proxy.url, path, { method: 'POST', headers: { authorization: basicAuth('1001') }, body: '{}' })

describe('routing by prefix', () => {
  it('another letter case and a doubled slash reach the trial host; the CRM never sees them', async () => {
    expect((await search('/Trial/V2/accounts/search')).status).toBe(200)
    expect((await search('//trial/v2/accounts/search')).status).toBe(200)
    expect(keyStats(trial, '1001', 'POST /accounts/search')?.requests).toBe(2)
    expect(keyStats(production, '1001', 'POST /accounts/search')).toBeUndefined()
  })

  it('a path that only starts like the prefix is below none: 404, and no upstream sees it', async () => {
    for (const path of ['/trialx/v2/accounts/search', '/trial/v22/accounts/search', '/trial']) {
      const answer = await search(path)
      expect(answer.status).toBe(404)
      expect(answer.json<{ code: string }[]>()[0]!.code).toBe('SLUICE_NOT_FOUND')
    }
    expect(keyStats(trial, '1001', 'POST /accounts/search')?.requests).toBe(2)
    expect(production.stats().keys).toEqual({})
  })
})
