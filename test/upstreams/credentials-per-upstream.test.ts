import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tokenHash } from '../support/apps.js'
import { send } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, startSim, type Sim } from '../support/sim.js'

/*
 * Credentials per upstream (docs/upstreams.md, "Credentials"), through the real proxy and a sim that
 * echoes what it got: `credentials.inject` on for the CRM and trial (its key under the Secret-safe name
 * `trial.1001`), off for an own API where apps keep their Bearer tokens, and keys in another header
 * or scheme where an upstream wants them so. Organisations of an upstream are granted by `<name> *`.
 */

const TOKEN = 'app-token-web-CRED-41c7'
const NARROW = 'app-token-narrow-CRED-88aa'
const ANY = 'app-token-any-CRED-03d1'
const KEY_PRODUCTION = 'api-key-1001-PROD-c0ffee'
const KEY_TRIAL = 'api-key-1001-TRIAL-beef01'
const KEY_STAGING = 'api-key-1001-STAGING-old-name'
const KEY_X = 'api-key-acct7-XHEADER-5150'
const KEY_BEARER = 'api-key-acct7-BEARER-9a9a'
const OWN = 'the-apps-own-reports-token-77'

let sim: Sim
let proxy: RunningProxy
let dir: string
beforeAll(async () => {
  sim = await startSim()
  dir = mkdtempSync(join(tmpdir(), 'sluice-credentials-'))
  const keysDir = join(dir, 'keys')
  mkdirSync(keysDir)
  writeFileSync(join(keysDir, '1001'), KEY_PRODUCTION)
  writeFileSync(join(keysDir, 'trial.1001'), KEY_TRIAL)
  writeFileSync(join(keysDir, 'staging 1001'), KEY_STAGING) // the older name, still read
  writeFileSync(join(keysDir, 'xkey.acct-7'), KEY_X)
  writeFileSync(join(keysDir, 'tokened.acct-7'), KEY_BEARER)
  const byHeader = { from: 'header', header: 'x-account-id' }
  const own = { default: 4 }
  proxy = await startProxy({
    upstream: sim.apiUrl,
    requestLog: false,
    apps: {
      enabled: true,
      list: {
        web: {
          tokens: [tokenHash(TOKEN)],
          orgs: ['1001', 'trial *', 'staging 1001', 'reports *', 'xkey.*', 'tokened acct-7'],
        },
        narrow: { tokens: [tokenHash(NARROW)], orgs: ['1001'] },
        any: { tokens: [tokenHash(ANY)], orgs: ['*'] },
      },
    },
    credentials: { inject: true, keysDir },
    upstreams: [
      { name: 'trial', prefix: '/trial/v2', url: sim.apiUrl, profile: 'neon-v2' },
      { name: 'staging', prefix: '/staging/v2', url: sim.apiUrl, profile: 'neon-v2' },
      {
        name: 'reports',
        prefix: '/reports/v1',
        url: sim.apiUrl,
        catalog: own,
        instance: byHeader,
        credentials: { inject: false },
      },
      {
        name: 'xkey',
        prefix: '/xkey/v1',
        url: sim.apiUrl,
        catalog: own,
        instance: byHeader,
        credentials: { header: 'X-Api-Key', scheme: 'none' },
      },
      {
        name: 'tokened',
        prefix: '/tokened/v1',
        url: sim.apiUrl,
        catalog: own,
        instance: byHeader,
        credentials: { scheme: 'bearer' },
      },
    ],
  })
})
afterAll(async () => {
  await proxy?.close()
  await sim?.close()
  rmSync(dir, { recursive: true, force: true })
})

const upstreamHeaders = (text: string): Record<string, unknown> =>
  (JSON.parse(text) as { headers: Record<string, unknown> }).headers
const code = (text: string): string => (JSON.parse(text) as { code: string }[])[0]!.code

describe('credentials per upstream', () => {
  it('the CRM and trial get their own keys for org 1001; trial\'s file is named "trial.1001"', async () => {
    const auth = { authorization: basicAuth('1001', TOKEN) }
    const production = await send(proxy.url, '/v2/accounts/42', { headers: auth })
    const trial = await send(proxy.url, '/trial/v2/accounts/42', { headers: auth })
    const staging = await send(proxy.url, '/staging/v2/accounts/42', { headers: auth })
    expect([production.status, trial.status, staging.status]).toEqual([200, 200, 200])
    expect(upstreamHeaders(production.text).authorization).toBe(basicAuth('1001', KEY_PRODUCTION))
    expect(upstreamHeaders(trial.text).authorization).toBe(basicAuth('1001', KEY_TRIAL))
    expect(upstreamHeaders(staging.text).authorization).toBe(basicAuth('1001', KEY_STAGING))
  })

  it('an upstream with inject off passes the app\'s own Bearer token untouched, granted by "reports *"', async () => {
    const answer = await send(proxy.url, '/reports/v1/accounts/42', {
      headers: { authorization: `Bearer ${OWN}`, 'x-sluice-app-token': TOKEN, 'x-account-id': 'acct-9' },
    })
    expect(answer.status).toBe(200)
    const got = upstreamHeaders(answer.text)
    expect(got.authorization).toBe(`Bearer ${OWN}`)
    expect(got['x-sluice-app-token']).toBeUndefined()
  })

  it('with inject off, a token sent as the Basic password is still not forwarded', async () => {
    const answer = await send(proxy.url, '/reports/v1/accounts/42', {
      headers: { authorization: basicAuth('acct-9', TOKEN), 'x-account-id': 'acct-9' },
    })
    expect(answer.status).toBe(200)
    expect(upstreamHeaders(answer.text).authorization).toBeUndefined()
  })

  it('a key goes in the header and scheme its upstream names', async () => {
    const headers = { authorization: basicAuth('acct-7', TOKEN), 'x-account-id': 'acct-7' }
    const inHeader = await send(proxy.url, '/xkey/v1/accounts/42', { headers })
    const asBearer = await send(proxy.url, '/tokened/v1/accounts/42', { headers })
    expect([inHeader.status, asBearer.status]).toEqual([200, 200])
    const x = upstreamHeaders(inHeader.text)
    expect(x['x-api-key']).toBe(KEY_X)
    expect(x.authorization).toBeUndefined() // the app's token never goes upstream
    expect(upstreamHeaders(asBearer.text).authorization).toBe(`Bearer ${KEY_BEARER}`)
  })

  it('an app granted org 1001 of the CRM only is refused on every other upstream', async () => {
    const trial = await send(proxy.url, '/trial/v2/accounts/42', {
      headers: { authorization: basicAuth('1001', NARROW) },
    })
    const reports = await send(proxy.url, '/reports/v1/accounts/42', {
      headers: { authorization: 'Bearer x', 'x-sluice-app-token': NARROW, 'x-account-id': '1001' },
    })
    expect([trial.status, reports.status]).toEqual([403, 403])
    expect([code(trial.text), code(reports.text)]).toEqual(['SLUICE_APP_ORG_FORBIDDEN', 'SLUICE_APP_ORG_FORBIDDEN'])
  })

  it("a CRM org id shaped like trial's key name never gets trial's key", async () => {
    const answer = await send(proxy.url, '/v2/accounts/42', {
      headers: { authorization: basicAuth('trial.1001', ANY) },
    })
    expect(answer.status).toBe(403)
    expect(code(answer.text)).toBe('SLUICE_NO_API_KEY')
  })

  it('no key, no token, ever in the log', () => {
    const text = JSON.stringify(proxy.logs)
    for (const secret of [TOKEN, NARROW, ANY, KEY_PRODUCTION, KEY_TRIAL, KEY_STAGING, KEY_X, KEY_BEARER, OWN])
      expect(text).not.toContain(secret)
  })
})
