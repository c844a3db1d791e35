import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tokenHash } from '../support/apps.js'
import { send } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, startSim, type Sim } from '../support/sim.js'

// An app token never reaches an upstream, whatever combination of the token header, the Basic
// password and the injection setting carries it (docs/apps.md, "Giving an app a token"). The sim
// echoes every header it received; no token may be among them, in any form.

const TOKEN_WEB = 'app-token-web-9c41e07b5a'
const TOKEN_BATCH = 'app-token-batch-3f8d62a1c0'
const API_KEY = 'api-key-of-1001-77e0c3'
const INJECTED = 'injected-key-1001-5b2e'
const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64')

const upstreams = (sim: Sim): unknown[] => [{ name: 'gh', prefix: '/gh', url: sim.githubUrl, profile: 'github-rest' }]
const apps = {
  enabled: true,
  list: {
    web: { tokens: [tokenHash(TOKEN_WEB)], orgs: ['*'] },
    batch: { tokens: [tokenHash(TOKEN_BATCH)], orgs: ['*'] },
  },
}

let sim: Sim
let identityOnly: RunningProxy
let injecting: RunningProxy
let identityOff: RunningProxy
const keysDir = mkdtempSync(join(tmpdir(), 'sluice-keys-'))
beforeAll(async () => {
  writeFileSync(join(keysDir, '1001'), INJECTED)
  sim = await startSim({ latencyMs: 0 })
  identityOnly = await startProxy({ upstream: sim.apiUrl, upstreams: upstreams(sim), apps })
  injecting = await startProxy({
    upstream: sim.apiUrl,
    upstreams: upstreams(sim),
    apps,
    credentials: { inject: true, keysDir },
  })
  identityOff = await startProxy({ upstream: sim.apiUrl })
})
afterAll(async () => {
  for (const p of [identityOnly, injecting, identityOff]) await p?.close()
  await sim?.close()
  rmSync(keysDir, { recursive: true, force: true })
})

interface Case {
  readonly name: string
  readonly headers: Record<string, string>
  /** the CRM's by default; `/gh/...` the GitHub profile's, whose instance is the credential */
  readonly path?: string
}

// Every way a request can carry a token: the header alone, the Basic password alone, both (the same
// token, or two apps' tokens), the header with the token in another scheme or the Basic username.
const CASES: readonly Case[] = [
  {
    name: 'header, own API key in Basic',
    headers: { 'x-sluice-app-token': TOKEN_WEB, authorization: basicAuth('1001', API_KEY) },
  },
  { name: 'Basic password only', headers: { authorization: basicAuth('1001', TOKEN_WEB) } },
  {
    name: 'header and Basic password, one token',
    headers: { 'x-sluice-app-token': TOKEN_WEB, authorization: basicAuth('1001', TOKEN_WEB) },
  },
  {
    name: 'header, another app token in Basic',
    headers: { 'x-sluice-app-token': TOKEN_WEB, authorization: basicAuth('1001', TOKEN_BATCH) },
  },
  {
    name: 'header and Bearer token (GitHub profile)',
    headers: { 'x-sluice-app-token': TOKEN_WEB, authorization: `Bearer ${TOKEN_WEB}` },
    path: '/gh/user',
  },
  {
    name: 'header and lower-case basic, spaced',
    headers: { 'x-sluice-app-token': TOKEN_WEB, authorization: `basic   ${b64(`1001:${TOKEN_WEB}`)} ` },
  },
]

/** what the upstream received, as text; the status of the answer */
async function upstreamSaw(
  proxy: RunningProxy,
  { headers, path = '/v2/accounts/42' }: Case,
): Promise<{ status: number; seen: Record<string, unknown> }> {
  const answer = await send(proxy.url, path, { headers })
  return {
    status: answer.status,
    seen: answer.status === 200 ? answer.json<{ headers: Record<string, unknown> }>().headers : {},
  }
}

function expectNoToken(seen: Record<string, unknown>): void {
  const text = JSON.stringify(seen)
  for (const token of [TOKEN_WEB, TOKEN_BATCH]) {
    expect(text).not.toContain(token)
    expect(text).not.toContain(b64(`1001:${token}`))
    expect(text).not.toContain(b64(token))
  }
  expect(seen['x-sluice-app-token']).toBeUndefined()
}

describe('an app token never reaches the API', () => {
  it.each(CASES)('identity on, injection off: $name', async (c) => {
    const { headers } = c
    const { status, seen } = await upstreamSaw(identityOnly, c)
    expect(status).toBe(200)
    expectNoToken(seen)
    // the app's own API key goes on; an Authorization that held a token goes nowhere
    const own = headers.authorization === basicAuth('1001', API_KEY)
    expect(seen.authorization).toBe(own ? basicAuth('1001', API_KEY) : undefined)
  })

  it.each(CASES)('identity on, injection on: $name', async (c) => {
    const { status, seen } = await upstreamSaw(injecting, c)
    expectNoToken(seen)
    // sluice holds no key for the GitHub token's instance: refused, nothing forwarded
    if (c.path !== undefined) return void expect(status).toBe(403)
    expect(status).toBe(200)
    expect(seen.authorization).toBe(basicAuth('1001', INJECTED))
  })

  it('identity off: the token header is removed, the Basic credentials go as sent', async () => {
    const { status, seen } = await upstreamSaw(identityOff, CASES[0]!)
    expect(status).toBe(200)
    expectNoToken(seen)
    expect(seen.authorization).toBe(basicAuth('1001', API_KEY))
  })
})
