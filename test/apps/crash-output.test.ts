import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { MAIN_JS, spawnProxy, type ProxyProcess } from '../support/process.js'
import { basicAuth, type Sim, startSim } from '../support/sim.js'
import { tokenHash } from '../support/apps.js'

// Keys and tokens never appear in what sluice prints when it fails: a refused start, a crash (an
// exception nothing caught), or an upstream failure while it holds the key (README "Apps: identity,
// access and keys"). Each run's whole output, stdout and stderr, is searched for every secret in
// every form it could take: as it is, base64, and inside a Basic-auth value.

const TOKEN = 'crash-test-app-token-6f0b2a'
const KEY_1001 = 'crash-test-api-key-1001-d93c'
const KEY_1002 = 'crash-test-api-key-1002-a7e4'
const SECRETS = [TOKEN, KEY_1001, KEY_1002]

const BASE_ENV = {
  PATH: process.env.PATH ?? '',
  SLUICE_HOST: '127.0.0.1',
  SLUICE_ADMIN_HOST: '127.0.0.1',
  SLUICE_PORT: '0',
  SLUICE_ADMIN_PORT: '0',
}

function expectNoSecret(output: string, where: string): void {
  for (const secret of SECRETS) {
    for (const form of [
      secret,
      Buffer.from(secret).toString('base64'),
      ...['1001', '1002'].map((org) => basicAuth(org, secret).slice(6)),
    ]) {
      expect(output.includes(form), `${where} holds a secret (${form.slice(0, 12)}…)`).toBe(false)
    }
  }
}

function start(env: Record<string, string>, args: string[] = []): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [...args, MAIN_JS], {
    env: { ...BASE_ENV, ...env },
    encoding: 'utf8',
    timeout: 15_000,
  })
  return { status: run.status, output: run.stdout + run.stderr }
}

let dir: string
let keysDir: string
let appsFile: string
let sim: Sim
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-crash-'))
  keysDir = join(dir, 'keys')
  mkdirSync(keysDir)
  writeFileSync(join(keysDir, '1001'), KEY_1001)
  appsFile = join(dir, 'apps.yaml')
  writeFileSync(appsFile, `web:\n  tokens: ["${tokenHash(TOKEN)}"]\n  orgs: ["*"]\n`)
  sim = await startSim({ latencyMs: 0 })
})
afterAll(async () => {
  await sim?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** The env of sluice holding both keys (one from the directory, one from an env var) with app identity on. */
const holdingKeys = (): Record<string, string> => ({
  SLUICE_APPS_ENABLED: 'true',
  SLUICE_APPS_FILE: appsFile,
  SLUICE_CREDENTIALS_INJECT: 'true',
  SLUICE_CREDENTIALS_KEYS_DIR: keysDir,
  SLUICE_ORG_KEY_1002: KEY_1002,
})

describe('a refused start prints no token or key', () => {
  it('a plain-text token where its hash belongs, in an env var that does not parse', () => {
    const run = start({
      SLUICE_APPS_ENABLED: 'true',
      SLUICE_APPS_LIST: `{"web":{"tokens":["${TOKEN}"],"orgs":["1001"]`,
    })
    expect(run.status).toBe(78)
    expect(run.output).toContain('sluice: invalid setting: apps.list (env SLUICE_APPS_LIST)')
    expectNoSecret(run.output, 'the refused start')
  })

  it('a plain-text token where its hash belongs, in the settings file', () => {
    const file = join(dir, 'settings.yaml')
    writeFileSync(file, `apps:\n  enabled: true\n  list:\n    web:\n      tokens: ["${TOKEN}"]\n      orgs: ["1001"]\n`)
    const run = start({ SLUICE_CONFIG: file })
    expect(run.status).toBe(78)
    expect(run.output).toContain(
      `sluice: invalid setting: apps.list.#1.tokens.0 (file ${file}, key apps.list.#1.tokens.0): a token hash`,
    )
    expectNoSecret(run.output, 'the refused start')
  })

  it('a start that fails after the keys were read (the admin port is taken)', async () => {
    const taken = createServer().listen(0, '127.0.0.1')
    await once(taken, 'listening')
    try {
      const port = (taken.address() as { port: number }).port
      const run = start({ ...holdingKeys(), SLUICE_ADMIN_PORT: String(port), SLUICE_UPSTREAM: sim.apiUrl })
      expect(run.status).toBe(78)
      expect(run.output).toContain(`sluice: the admin server cannot listen on 127.0.0.1:${port}`)
      expectNoSecret(run.output, 'the refused start')
    } finally {
      taken.close()
    }
  })
})

describe('a crash prints no key', () => {
  it('an exception nothing caught, carrying the key the way a library error carries its request, is one redacted line and exit 70', async () => {
    // Loaded before sluice (node --import): on SIGUSR2, throws what an HTTP client's error looks like
    // when it keeps its request options: the Authorization sluice set, in a field and in its message.
    const preload = join(dir, 'throw-on-usr2.mjs')
    writeFileSync(
      preload,
      `process.on('SIGUSR2', () => {
  const auth = ${JSON.stringify(basicAuth('1001', KEY_1001))}
  const err = new Error('request to the API failed, authorization: ' + auth)
  err.options = { method: 'GET', headers: { authorization: auth, 'x-api-key': ${JSON.stringify(KEY_1002)} } }
  err.apiKey = ${JSON.stringify(KEY_1002)}
  throw err
})
`,
    )
    const child = spawn(process.execPath, ['--import', preload, MAIN_JS], {
      env: { ...BASE_ENV, ...holdingKeys(), SLUICE_UPSTREAM: sim.apiUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d.toString()))
    child.stderr.on('data', (d: Buffer) => (output += d.toString()))
    const exited = once(child, 'exit') as Promise<[number | null]>
    try {
      await until(() => output.includes('"sluice listening"'), 'sluice listening', 15_000)
      const proxyUrl = (
        JSON.parse(output.split('\n').find((l) => l.includes('"sluice listening"'))!) as { proxyUrl: string }
      ).proxyUrl
      // the key is in use: one request injected with it
      const answer = await send(proxyUrl, '/v2/accounts/42', { headers: { authorization: basicAuth('1001', TOKEN) } })
      expect(answer.status).toBe(200)
      child.kill('SIGUSR2')
      const [code] = await exited
      expect(code).toBe(70)
    } finally {
      child.kill('SIGKILL')
    }
    const crash = output.split('\n').find((l) => l.includes('sluice crashed'))
    expect(crash, output).toBeDefined()
    expect(JSON.parse(crash!)).toMatchObject({
      level: 60,
      msg: 'sluice crashed: an exception nothing caught',
      err: { type: 'Error' },
    })
    expectNoSecret(output, 'the crash output')
  })
})

describe('upstream failures while sluice holds the key', () => {
  let proxy: ProxyProcess
  let closedPort: number
  afterAll(async () => {
    await proxy?.stop()
  })

  it('an upstream that refuses connections, and one that drops them: error bodies and the log at trace hold no key', async () => {
    const probe = createServer().listen(0, '127.0.0.1')
    await once(probe, 'listening')
    closedPort = (probe.address() as { port: number }).port
    await new Promise<void>((resolve) => probe.close(() => resolve()))

    proxy = await spawnProxy({
      ...holdingKeys(),
      SLUICE_UPSTREAM: `http://127.0.0.1:${closedPort}/v2`,
      SLUICE_LOG_LEVEL: 'trace',
    })
    const refused = await send(proxy.url, '/v2/accounts/42', { headers: { authorization: basicAuth('1001', TOKEN) } })
    expect(refused.status).toBe(502)
    await proxy.stop()

    proxy = await spawnProxy({ ...holdingKeys(), SLUICE_UPSTREAM: sim.apiUrl, SLUICE_LOG_LEVEL: 'trace' })
    const dropped = await send(proxy.url, '/v2/accounts/42', {
      headers: { authorization: basicAuth('1002', TOKEN), 'x-sim-destroy': '1' },
    })
    expect(dropped.status).toBe(502)
    await until(() => proxy.output().includes('"msg":"request"'), 'the access line')

    expectNoSecret(
      refused.text + JSON.stringify(refused.headers) + dropped.text + JSON.stringify(dropped.headers),
      'the error answers',
    )
    expectNoSecret(proxy.output(), 'the log')
  })
})
