import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAIN_JS } from '../support/process.js'

const SIM_MAIN_JS = fileURLToPath(new URL('../../dist/sim/main.js', import.meta.url))

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a real process to its exit (a start that does not fail is killed after 15 s, and the test fails). */
async function run(script: string, env: Record<string, string>): Promise<Run> {
  const child = spawn(process.execPath, [script], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  const [code] = (await once(child, 'exit')) as [number | null]
  clearTimeout(timer)
  return { code, stdout, stderr }
}

const sluice = (env: Record<string, string>): Promise<Run> =>
  run(MAIN_JS, { SLUICE_HOST: '127.0.0.1', SLUICE_ADMIN_HOST: '127.0.0.1', SLUICE_PORT: '0', SLUICE_ADMIN_PORT: '0', ...env })

/** Exit code 78 and exactly one line on stderr, no stack anywhere; returns the line. */
function oneLine(result: Run): string {
  expect(result.code).toBe(78)
  const lines = result.stderr.split('\n').filter((l) => l !== '')
  expect(lines).toHaveLength(1)
  expect(result.stderr + result.stdout).not.toMatch(/\n\s+at /)
  return lines[0]!
}

let busy: Server
let busyPort: number
beforeAll(async () => {
  busy = createServer()
  busy.listen(0, '127.0.0.1')
  await once(busy, 'listening')
  busyPort = (busy.address() as { port: number }).port
})
afterAll(() => new Promise<void>((resolve) => busy.close(() => resolve())))

describe('every start-up failure is one line naming the cause, and exit code 78', () => {
  it('the proxy port in use', async () => {
    expect(oneLine(await sluice({ SLUICE_PORT: String(busyPort) }))).toBe(
      `sluice: the proxy cannot listen on 127.0.0.1:${busyPort} (host from env SLUICE_HOST, port from env SLUICE_PORT): the port is in use by another process`,
    )
  })

  it('the admin port in use', async () => {
    expect(oneLine(await sluice({ SLUICE_ADMIN_PORT: String(busyPort) }))).toBe(
      `sluice: the admin server cannot listen on 127.0.0.1:${busyPort} (adminHost from env SLUICE_ADMIN_HOST, adminPort from env SLUICE_ADMIN_PORT): the port is in use by another process`,
    )
  })

  it('a Redis URL that is no URL, its password masked', async () => {
    const line = oneLine(await sluice({ SLUICE_REDIS_URL: 'redis://:x@[bad' }))
    expect(line).toBe(
      'sluice: invalid setting: redis.url (env SLUICE_REDIS_URL): not a valid URL (a password with @ : / [ or ] must be percent-encoded); got "redis://:***@[bad"',
    )
  })

  it('SLUICE_PORT=abc shows the value', async () => {
    expect(oneLine(await sluice({ SLUICE_PORT: 'abc' }))).toBe('sluice: invalid setting: port (env SLUICE_PORT): Invalid input: expected number, received string; got "abc"')
  })

  it('a bad value in the file names the file and the key, not an env var', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sluice-start-')), 'sluice.yaml')
    writeFileSync(file, 'queue:\n  maxWaitMs: 0\nadminToken: my-secret-admin-token-but-bad\nadminTokenHealth: maybe\n')
    const line = oneLine(await sluice({ SLUICE_CONFIG: file }))
    expect(line).not.toContain('my-secret-admin-token')
    expect(line).toBe(
      `sluice: invalid settings: queue.maxWaitMs (file ${file}, key queue.maxWaitMs): Too small: expected number to be >0; got 0; ` +
        `adminTokenHealth (file ${file}, key adminTokenHealth): Invalid input: expected boolean, received string; got "maybe"`,
    )
  })

  it('a secret setting is never shown, even when it is the bad one', async () => {
    const line = oneLine(await sluice({ SLUICE_ADMIN_TOKEN: 'short-secret' }))
    expect(line).toBe('sluice: invalid setting: adminToken (env SLUICE_ADMIN_TOKEN): at least 16 characters; got "***"')
    const upstream = oneLine(await sluice({ SLUICE_UPSTREAM: 'https://me:hunter2hunter2@api.example.org/v2' }))
    expect(upstream).toContain('got "https://me:***@api.example.org/v2"')
    expect(upstream).not.toContain('hunter2')
  })

  it('a limits.overrides key that matches no endpoint stops the start with a "did you mean", naming where it came from', async () => {
    expect(oneLine(await sluice({ SLUICE_LIMITS_OVERRIDES: '{"GET /acounts/{id}/contacts":3}' }))).toBe(
      'sluice: limits.overrides: "GET /acounts/{id}/contacts" is not an endpoint id of the catalog nor the template of an unknown path; did you mean "GET /accounts/{id}/contacts"? (env SLUICE_LIMITS_OVERRIDES)',
    )
    const file = join(mkdtempSync(join(tmpdir(), 'sluice-start-')), 'sluice.yaml')
    writeFileSync(file, 'limits:\n  overrides:\n    "POST /acounts/search": 2\n')
    expect(oneLine(await sluice({ SLUICE_CONFIG: file }))).toBe(
      `sluice: limits.overrides: "POST /acounts/search" is not an endpoint id of the catalog nor the template of an unknown path; did you mean "POST /accounts/search"? (file ${file}, key limits.overrides)`,
    )
  })

  it('a settings file that is missing or not YAML, and a broken version calendar', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-start-'))
    expect(oneLine(await sluice({ SLUICE_CONFIG: join(dir, 'none.yaml') }))).toBe(
      `sluice: SLUICE_CONFIG: cannot read ${join(dir, 'none.yaml')}: ENOENT: no such file or directory, open '${join(dir, 'none.yaml')}'`,
    )
    writeFileSync(join(dir, 'bad.yaml'), 'port: [1,\n')
    expect(oneLine(await sluice({ SLUICE_CONFIG: join(dir, 'bad.yaml') }))).toMatch(new RegExp(`^sluice: SLUICE_CONFIG: ${join(dir, 'bad.yaml')} is not valid YAML: `))
    writeFileSync(join(dir, 'calendar.yaml'), 'versions:\n  - version: 2.x\n')
    expect(oneLine(await sluice({ SLUICE_VERSIONS_CALENDAR_FILE: join(dir, 'calendar.yaml') }))).toBe(
      `sluice: ${join(dir, 'calendar.yaml')}: invalid version calendar: versions[0] (2.x).version: a version <major>.<minor> such as 2.10, got "2.x"`,
    )
  })

  it('npm run sim on a busy port', async () => {
    const result = await run(SIM_MAIN_JS, { SIM_HOST: '127.0.0.1', SIM_PORT: String(busyPort) })
    expect(oneLine(result)).toBe(`sim: cannot listen on 127.0.0.1:${busyPort} (SIM_HOST, SIM_PORT): the port is in use by another process`)
  })
})
