import { createServer } from 'node:net'
import { once } from 'node:events'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { spawnProxy, type ProxyProcess } from '../support/process.js'
import { startRedis, type TestRedis } from '../support/redis.js'
import { startSim, type Sim } from '../support/sim.js'
import { needs } from '../support/tools.js'

/*
 * The real process, at log level trace, driven down each error path where a credential is at hand;
 * then its whole output (stdout and stderr) is searched for the credential.
 */

const REDIS_PASSWORD = 'WRONGPASS777'
const TLS_PASSWORD = 'TLSPASS999x'
const API_KEY = 'APIKEY555secret'
const QUERY_KEY = 'QUERYKEY42secret'
const HEADER_KEY = 'XAPIKEY31secret'
const COOKIE = 'COOKIE27secret'

const basic = (org: string, key: string): string => `Basic ${Buffer.from(`${org}:${key}`).toString('base64')}`

let redis: TestRedis
let sim: Sim
let closedPort: number
const running: ProxyProcess[] = []
beforeAll(async () => {
  redis = await startRedis({ extraArgs: ['--requirepass', 'the-right-password'] })
  sim = await startSim({})
  const probe = createServer().listen(0, '127.0.0.1')
  await once(probe, 'listening')
  closedPort = (probe.address() as { port: number }).port
  await new Promise<void>((resolve) => probe.close(() => resolve()))
})
afterAll(async () => {
  for (const p of running) await p.stop()
  await sim.close()
  await redis.close()
})

async function proxy(env: Record<string, string>): Promise<ProxyProcess> {
  const p = await spawnProxy({ SLUICE_LOG_LEVEL: 'trace', ...env })
  running.push(p)
  return p
}

/** Requests carrying every kind of credential an app sends. */
async function sendCredentials(p: ProxyProcess, path = '/v2/accounts/1/contacts', maxWait?: number): Promise<number> {
  const wait: Record<string, string> = maxWait === undefined ? {} : { 'x-sluice-max-wait': String(maxWait) }
  const answer = await send(p.url, `${path}?apiKey=${QUERY_KEY}&password=${QUERY_KEY}`, {
    headers: { authorization: basic('org1', API_KEY), 'x-api-key': HEADER_KEY, cookie: `session=${COOKIE}`, ...wait },
  })
  return answer.status
}

const SECRETS = [
  REDIS_PASSWORD,
  TLS_PASSWORD,
  API_KEY,
  QUERY_KEY,
  HEADER_KEY,
  COOKIE,
  Buffer.from(`org1:${API_KEY}`).toString('base64'),
]
const leaked = (output: string): string[] => SECRETS.filter((s) => output.includes(s))

describe('no secret in any line of the output, whatever the error', () => {
  it(`a wrong Redis password (ioredis puts the AUTH command with its arguments on the error) ${needs('redis-server')}`, async (ctx) => {
    if (!redis.managed) ctx.skip() // SLUICE_TEST_REDIS_URL's server has no password of ours
    const p = await proxy({
      SLUICE_REDIS_URL: `redis://:${REDIS_PASSWORD}@127.0.0.1:${redis.port}/0`,
      SLUICE_UPSTREAM: sim.apiUrl,
    })
    await until(() => p.output().includes('WRONGPASS invalid username-password pair'), 'the refused AUTH logged')
    // never reached Redis: in `local` it holds no slot (docs/redis-limiter.md, "Failure modes"), so the
    // request waits its 1 s and is refused — logged like any other answer
    expect(await sendCredentials(p, undefined, 1)).toBe(503)
    await until(() => (p.output().match(/WRONGPASS invalid/g) ?? []).length >= 2, 'a reconnect refused too')
    await p.stop()
    expect(p.output()).toContain('"args":"[redacted]"')
    expect(leaked(p.output())).toEqual([])
  })

  it(`a wrong Redis user and password ${needs('redis-server')}`, async (ctx) => {
    if (!redis.managed) ctx.skip()
    const p = await proxy({
      SLUICE_REDIS_URL: `redis://someone:${REDIS_PASSWORD}@127.0.0.1:${redis.port}/0`,
      SLUICE_UPSTREAM: sim.apiUrl,
    })
    await until(() => p.output().includes('WRONGPASS'), 'the refused AUTH logged')
    await p.stop()
    expect(leaked(p.output())).toEqual([])
  })

  it('a TLS failure: rediss:// to a plain port', async () => {
    const p = await proxy({
      SLUICE_REDIS_URL: `rediss://:${TLS_PASSWORD}@127.0.0.1:${redis.port}/0`,
      SLUICE_UPSTREAM: sim.apiUrl,
    })
    await until(() => /"level":(40|50).*limiter/.test(p.output()), 'the TLS failure logged')
    expect(await sendCredentials(p, undefined, 1)).toBe(503)
    await p.stop()
    expect(leaked(p.output())).toEqual([])
  })

  it('an upstream that cannot be reached, and one that drops the connection', async () => {
    const unreachable = await proxy({ SLUICE_UPSTREAM: `http://127.0.0.1:${closedPort}/v2` })
    expect(await sendCredentials(unreachable)).toBe(502)
    await unreachable.stop()
    expect(unreachable.output()).toContain('"msg":"request failed"')
    expect(leaked(unreachable.output())).toEqual([])

    const dropping = await proxy({ SLUICE_UPSTREAM: sim.apiUrl })
    const answer = await send(dropping.url, `/v2/accounts/1?apiKey=${QUERY_KEY}`, {
      headers: { authorization: basic('org1', API_KEY), 'x-api-key': HEADER_KEY, 'x-sim-destroy': '1' },
    })
    expect(answer.status).toBe(502)
    await dropping.stop()
    expect(leaked(dropping.output())).toEqual([])
  })

  it('an upstream URL with credentials in it: refused at start, the password masked', async () => {
    const { spawnSync } = await import('node:child_process')
    const { MAIN_JS } = await import('../support/process.js')
    const run = spawnSync(process.execPath, [MAIN_JS], {
      env: {
        PATH: process.env.PATH,
        SLUICE_UPSTREAM: `https://org1:${API_KEY}@api.example.org/v2`,
        SLUICE_PORT: '0',
        SLUICE_ADMIN_PORT: '0',
      },
      encoding: 'utf8',
      timeout: 15_000,
    })
    expect(run.status).toBe(78)
    expect(run.stderr).toContain('got "https://org1:***@api.example.org/v2"')
    expect(leaked(run.stdout + run.stderr)).toEqual([])
  })
})
