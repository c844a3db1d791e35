import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tokenHash } from '../support/apps.js'
import { send } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, startSim, type Sim } from '../support/sim.js'

/*
 * App identity on another upstream (docs/upstreams.md, "Keys"): an app's orgs and the keys sluice
 * injects name trial's organisation `trial 1001`, and the key goes with the bare org id, so a
 * production key never reaches the trial host.
 */

const TOKEN = 'app-token-web-UPST-5c1e0a'
const KEY_PRODUCTION = 'api-key-1001-PROD-7a21'
const KEY_TRIAL = 'api-key-1001-TRIAL-93fe'

let production: Sim
let trial: Sim
let proxy: RunningProxy
let dir: string
beforeAll(async () => {
  production = await startSim()
  trial = await startSim()
  dir = mkdtempSync(join(tmpdir(), 'sluice-upstream-keys-'))
  const keysDir = join(dir, 'keys')
  mkdirSync(keysDir)
  writeFileSync(join(keysDir, '1001'), KEY_PRODUCTION)
  writeFileSync(join(keysDir, 'trial 1001'), KEY_TRIAL)
  proxy = await startProxy({
    upstream: production.apiUrl,
    requestLog: false,
    apps: {
      enabled: true,
      list: {
        web: { tokens: [tokenHash(TOKEN)], orgs: ['1001', 'trial 1001'] },
        prod: { tokens: [tokenHash(`${TOKEN}-prod`)], orgs: ['1001'] },
      },
    },
    credentials: { inject: true, keysDir },
    upstreams: [{ name: 'trial', prefix: '/trial/v2', url: trial.apiUrl, profile: 'neon-v2' }],
  })
})
afterAll(async () => {
  await proxy.close()
  await production.close()
  await trial.close()
  rmSync(dir, { recursive: true, force: true })
})

const upstreamAuth = (text: string): unknown =>
  (JSON.parse(text) as { headers: Record<string, unknown> }).headers.authorization

describe('apps on another upstream', () => {
  it('each host gets its own key for org 1001, the bare org id as the username', async () => {
    const onProduction = await send(proxy.url, '/v2/accounts/42', {
      headers: { authorization: basicAuth('1001', TOKEN) },
    })
    const onTrial = await send(proxy.url, '/trial/v2/accounts/42', {
      headers: { authorization: basicAuth('1001', TOKEN) },
    })
    expect([onProduction.status, onTrial.status]).toEqual([200, 200])
    expect(upstreamAuth(onProduction.text)).toBe(basicAuth('1001', KEY_PRODUCTION))
    expect(upstreamAuth(onTrial.text)).toBe(basicAuth('1001', KEY_TRIAL))
  })

  it('an app allowed org 1001 on production is not thereby allowed it on trial', async () => {
    const refused = await send(proxy.url, '/trial/v2/accounts/42', {
      headers: { authorization: basicAuth('1001', `${TOKEN}-prod`) },
    })
    expect(refused.status).toBe(403)
    expect(refused.json<{ code: string }[]>()[0]!.code).toBe('SLUICE_APP_ORG_FORBIDDEN')
    // only the first test's request reached the trial host
    expect(trial.stats().keys['1001 GET /accounts/{id}']?.requests).toBe(1)
  })
})
