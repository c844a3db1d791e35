import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { spawnProxy, type ProxyProcess } from '../support/process.js'
import { basicAuth, type Sim, startSim } from '../support/sim.js'
import { useRedis } from '../support/use-redis.js'
import { tokenHash } from '../support/apps.js'

// App identity and credential injection through the real process, the real sim and a real Redis
// (README "Apps: identity, access and keys").

const TOKEN_A = 'app-token-web-AAAA-1f4c9e'
const TOKEN_B = 'app-token-web-BBBB-7d2a01'
const TOKEN_BATCH = 'app-token-batch-CCCC-93b1'
const KEY_1001 = 'api-key-1001-REAL-0c7e55aa'
const KEY_1001_NEXT = 'api-key-1001-NEXT-b84f1c02'
const KEY_1002 = 'api-key-1002-ENV-51de0f3b'
const SECRETS = [TOKEN_A, TOKEN_B, TOKEN_BATCH, KEY_1001, KEY_1001_NEXT, KEY_1002]

const sha512 = (token: string): string => 'sha512:' + createHash('sha512').update(token).digest('hex')

function appsYaml(webTokens: readonly string[]): string {
  return [
    'web:',
    `  tokens: [${webTokens.map((t) => `"${t}"`).join(', ')}]`,
    '  orgs: ["1001"]',
    '  endpoints: [GET, "POST /accounts/search"]',
    'batch:',
    `  tokens: ["${sha512(TOKEN_BATCH)}"]`,
    '  orgs: ["*"]',
    '',
  ].join('\n')
}

const redis = useRedis()
let sim: Sim
let proxy: ProxyProcess
let dir: string | undefined
let appsFile: string
let keysDir: string
/** what the client received, for the leak check */
const bodies: string[] = []

async function get(
  path: string,
  headers: Record<string, string>,
  method = 'GET',
): Promise<{ status: number; body: unknown; text: string; headers: Record<string, unknown> }> {
  const answer = await send(proxy.url, path, { method, headers })
  // every answer's headers; the bodies of sluice's own answers (the sim's echo of what it received is the upstream's)
  bodies.push(JSON.stringify(answer.headers))
  if (answer.status !== 200) bodies.push(answer.text)
  return {
    status: answer.status,
    body: answer.text.startsWith('[') || answer.text.startsWith('{') ? answer.json() : answer.text,
    text: answer.text,
    headers: answer.headers,
  }
}

/** what the sim received as Authorization (it echoes the request's headers) */
const upstreamAuth = (answer: { body: unknown }): unknown =>
  (answer.body as { headers: Record<string, unknown> }).headers.authorization

beforeAll(async () => {
  sim = await startSim({ latencyMs: 0 })
  dir = mkdtempSync(join(tmpdir(), 'sluice-apps-'))
  appsFile = join(dir, 'apps.yaml')
  keysDir = join(dir, 'keys')
  writeFileSync(appsFile, appsYaml([tokenHash(TOKEN_A)]))
  mkdirSync(keysDir)
  writeFileSync(join(keysDir, '1001'), KEY_1001 + '\n')
  proxy = await spawnProxy({
    SLUICE_UPSTREAM: sim.apiUrl,
    SLUICE_REDIS_URL: redis.url,
    SLUICE_APPS_ENABLED: 'true',
    SLUICE_APPS_FILE: appsFile,
    // re-reads are asked for with SIGHUP below, so the test never races a poll
    SLUICE_APPS_RELOAD_INTERVAL_MS: '3600000',
    SLUICE_CREDENTIALS_INJECT: 'true',
    SLUICE_CREDENTIALS_KEYS_DIR: keysDir,
    SLUICE_ORG_KEY_1002: KEY_1002,
  })
})

afterAll(async () => {
  await proxy?.stop()
  await sim?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe('app identity and credential injection', () => {
  it('drop-in: the app sends Basic orgId:token, the API receives Basic orgId:apiKey', async () => {
    const answer = await get('/v2/accounts/42', { authorization: basicAuth('1001', TOKEN_A) })
    expect(answer.status).toBe(200)
    expect(upstreamAuth(answer)).toBe(basicAuth('1001', KEY_1001))
    // the header form, with the organisation in the instance header; the token header never goes upstream
    const byHeader = await get('/v2/accounts/42', { 'x-sluice-app-token': TOKEN_A, 'x-sluice-instance': '1001' })
    expect(byHeader.status).toBe(200)
    expect(upstreamAuth(byHeader)).toBe(basicAuth('1001', KEY_1001))
    expect((byHeader.body as { headers: Record<string, unknown> }).headers['x-sluice-app-token']).toBeUndefined()
    // a sha512 token and an org key from an env var
    const batch = await get('/v2/accounts/42', { authorization: basicAuth('1002', TOKEN_BATCH) })
    expect(batch.status).toBe(200)
    expect(upstreamAuth(batch)).toBe(basicAuth('1002', KEY_1002))
  })

  it('401 for an unknown token and for none', async () => {
    const unauthenticated = [
      {
        code: 'SLUICE_APP_UNAUTHENTICATED',
        message:
          'sluice requires an app token: send it as the Basic-auth password (orgId:token) or in the app token header',
      },
    ]
    const attempts: Record<string, string>[] = [
      { authorization: basicAuth('1001', 'not-a-token') },
      {},
      { 'x-sluice-app-token': 'nope', 'x-sluice-instance': '1001' },
    ]
    for (const headers of attempts) {
      const answer = await get('/v2/accounts/42', headers)
      expect(answer.status).toBe(401)
      expect(answer.body).toEqual(unauthenticated)
    }
  })

  it('403 for an organisation and an endpoint the app may not use, and for an org sluice holds no key for', async () => {
    const org = await get('/v2/accounts/42', { authorization: basicAuth('1002', TOKEN_A) })
    expect(org.status).toBe(403)
    expect(org.body).toEqual([
      { code: 'SLUICE_APP_ORG_FORBIDDEN', message: 'The app web may not use organisation 1002' },
    ])
    const endpoint = await get(
      '/v2/accounts',
      { authorization: basicAuth('1001', TOKEN_A), 'content-type': 'application/json' },
      'POST',
    )
    expect(endpoint.status).toBe(403)
    expect(endpoint.body).toEqual([
      { code: 'SLUICE_APP_ENDPOINT_FORBIDDEN', message: 'The app web may not use POST /accounts' },
    ])
    // allowed by endpoint id
    const search = await get(
      '/v2/accounts/search',
      { authorization: basicAuth('1001', TOKEN_A), 'content-type': 'application/json' },
      'POST',
    )
    expect(search.status).toBe(200)
    const noKey = await get('/v2/accounts/42', { authorization: basicAuth('1003', TOKEN_BATCH) })
    expect(noKey.status).toBe(403)
    expect(noKey.body).toEqual([
      { code: 'SLUICE_NO_API_KEY', message: 'sluice holds no API key for organisation 1003' },
    ])
  })

  it('rotation without restart: old and new token both valid, then the old one removed; a new key', async () => {
    writeFileSync(appsFile, appsYaml([tokenHash(TOKEN_A), tokenHash(TOKEN_B)]))
    proxy.child.kill('SIGHUP')
    await until(
      async () => (await get('/v2/accounts/42', { authorization: basicAuth('1001', TOKEN_B) })).status === 200,
      'the new token accepted',
    )
    expect((await get('/v2/accounts/42', { authorization: basicAuth('1001', TOKEN_A) })).status).toBe(200)

    writeFileSync(appsFile, appsYaml([tokenHash(TOKEN_B)]))
    writeFileSync(join(keysDir, '1001'), KEY_1001_NEXT)
    proxy.child.kill('SIGHUP')
    await until(
      async () => (await get('/v2/accounts/42', { authorization: basicAuth('1001', TOKEN_A) })).status === 401,
      'the old token refused',
    )
    const answer = await get('/v2/accounts/42', { authorization: basicAuth('1001', TOKEN_B) })
    expect(answer.status).toBe(200)
    expect(upstreamAuth(answer)).toBe(basicAuth('1001', KEY_1001_NEXT))

    // a broken file keeps the tokens in force
    writeFileSync(appsFile, 'web: [not, an, app')
    proxy.child.kill('SIGHUP')
    await until(() => proxy.output().includes('app tokens not reloaded'), 'the failed re-read logged')
    expect((await get('/v2/accounts/42', { authorization: basicAuth('1001', TOKEN_B) })).status).toBe(200)
  })

  it('the access line names the app', async () => {
    await until(() => proxy.output().includes('"app":"web"'), 'an access line with app web')
    const line = proxy
      .output()
      .split('\n')
      .find((l) => l.includes('"msg":"request"') && l.includes('"app":"batch"'))
    expect(line).toBeDefined()
  })

  it('no token or key in logs, metrics, /status, Redis or any answer the client got', async () => {
    const metrics = await (await fetch(proxy.adminUrl + '/metrics')).text()
    const status = await (await fetch(proxy.adminUrl + '/status')).text()
    const client = redis.client()
    const stored: string[] = []
    for (const key of await client.keys('*')) {
      stored.push(key)
      const type = await client.type(key)
      if (type === 'string') stored.push((await client.get(key)) ?? '')
      else if (type === 'hash') stored.push(JSON.stringify(await client.hgetall(key)))
      else if (type === 'zset') stored.push(JSON.stringify(await client.zrange(key, 0, -1, 'WITHSCORES')))
      else if (type === 'list') stored.push(JSON.stringify(await client.lrange(key, 0, -1)))
      else if (type === 'set') stored.push(JSON.stringify(await client.smembers(key)))
    }
    client.disconnect()
    expect(stored.length).toBeGreaterThan(0)
    const ownAnswers = bodies
    expect(ownAnswers.some((b) => b.includes('SLUICE_APP_UNAUTHENTICATED'))).toBe(true)
    const places = { logs: proxy.output(), metrics, status, redis: stored.join('\n'), answers: ownAnswers.join('\n') }
    for (const [place, text] of Object.entries(places)) {
      for (const secret of SECRETS) {
        for (const form of [
          secret,
          Buffer.from(secret).toString('base64'),
          basicAuth('1001', secret).slice(6),
          basicAuth('1002', secret).slice(6),
        ]) {
          expect(text.includes(form), `${place} holds a secret`).toBe(false)
        }
      }
    }
    // label values may hold braces (an endpoint template): skip quoted values whole
    expect(metrics).toMatch(
      /sluice_requests_total\{(?:"[^"]*"|[^}"])*code="401"(?:"[^"]*"|[^}"])*outcome="unauthenticated"/,
    )
    expect(metrics).toMatch(/sluice_requests_total\{(?:"[^"]*"|[^}"])*code="403"(?:"[^"]*"|[^}"])*outcome="forbidden"/)
    // per app: a 401 names no app; a 403 is the refused app's (web's lists, batch's org without a key)
    expect(metrics).toMatch(/^sluice_app_requests_total\{app="_unknown",code="401",outcome="unauthenticated"\} [1-9]/m)
    expect(metrics).toMatch(/^sluice_app_requests_total\{app="web",code="403",outcome="forbidden"\} 2$/m)
    expect(metrics).toMatch(/^sluice_app_requests_total\{app="batch",code="403",outcome="forbidden"\} 1$/m)
    const refused = proxy
      .output()
      .split('\n')
      .filter((l) => l.includes('"msg":"request"') && l.includes('"status":403'))
    expect(refused.length).toBeGreaterThan(0)
    for (const line of refused) expect(line).toMatch(/"app":"(web|batch)"/)
  })
})
