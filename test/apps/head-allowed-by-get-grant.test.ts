import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, type Sim, startSim } from '../support/sim.js'
import { tokenHash } from '../support/apps.js'

// An app's access list grants methods as HTTP means them: a `GET` grant allows HEAD too, as an
// endpoint grant of `GET /accounts/{id}` already does (README "Apps: identity, access and keys").

const READER = 'reader-token-6c1f0a9e2b'
const HEADER = 'header-token-3d8b7e51aa'
const SEARCHER = 'searcher-token-91e4c07f'

let sim: Sim
let proxy: RunningProxy
beforeAll(async () => {
  sim = await startSim({ latencyMs: 0 })
  proxy = await startProxy({
    upstream: sim.apiUrl,
    apps: {
      enabled: true,
      list: {
        reader: { tokens: [tokenHash(READER)], orgs: ['1001'], endpoints: ['GET'] },
        header: { tokens: [tokenHash(HEADER)], orgs: ['1001'], endpoints: ['HEAD'] },
        searcher: { tokens: [tokenHash(SEARCHER)], orgs: ['1001'], endpoints: ['POST /accounts/search'] },
      },
    },
  })
})
afterAll(async () => {
  await proxy?.close()
  await sim?.close()
})

const ask = (method: string, token: string) =>
  send(proxy.url, '/v2/accounts/42', { method, headers: { authorization: basicAuth('1001', token) } })

describe('a GET grant', () => {
  it('allows HEAD', async () => {
    const head = await ask('HEAD', READER)
    expect(head.status).toBe(200)
    expect(head.text).toBe('')
    expect((await ask('GET', READER)).status).toBe(200)
  })

  it('is the only method grant that does: a HEAD grant allows no GET, an endpoint grant for another endpoint no HEAD', async () => {
    expect((await ask('HEAD', HEADER)).status).toBe(200)
    const get = await ask('GET', HEADER)
    expect(get.status).toBe(403)
    expect(get.json()).toEqual([
      { code: 'SLUICE_APP_ENDPOINT_FORBIDDEN', message: 'The app header may not use GET /accounts/{id}' },
    ])
    const head = await ask('HEAD', SEARCHER)
    expect(head.status).toBe(403)
  })
})
