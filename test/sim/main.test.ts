import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** `npm run sim` runs dist/sim/main.js; here the same module runs from source through tsx. */
function runSim(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/sim/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const url = /listening on (http:\/\/\S+) /.exec(stdout)?.[1]
      if (url) resolve(url)
    })
    void exited.then((code) => reject(new Error(`sim exited ${code}: ${stderr}`)))
  })
  listening.catch(() => undefined) // a test that expects an exit does not await it
  return { child, listening, exited, output: () => ({ stdout, stderr }) }
}

describe('npm run sim (src/sim/main.ts)', () => {
  it('listens where SIM_* say, applies them, and exits 0 on SIGTERM', async () => {
    const sim = runSim({ SIM_PORT: '0', SIM_HOST: '127.0.0.1', SIM_UNLISTED_LIMIT: '1', SIM_REJECT_RATIO: '0' })
    const url = await sim.listening
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    const hung = new AbortController()
    request(`${url}/v2/groups/list`, { headers: { 'x-sim-hang': '1' }, signal: hung.signal }).catch(() => undefined)
    // SIM_UNLISTED_LIMIT=1: the second concurrent request to an unlisted endpoint gets a 429
    let status = 0
    for (let i = 0; i < 200 && status !== 429; i++) {
      const res = await request(`${url}/v2/groups/list`)
      status = res.statusCode
      await res.body.dump()
    }
    expect(status).toBe(429)
    hung.abort()
    sim.child.kill('SIGTERM')
    expect(await sim.exited).toBe(0)
    expect(sim.output().stdout).toContain('SIGTERM, closing')
  })

  it('refuses a bad setting, naming it, with exit code 78', async () => {
    const sim = runSim({ SIM_PORT: '0', SIM_LATENCY_MS: 'fast' })
    expect(await sim.exited).toBe(78)
    expect(sim.output().stderr).toContain('SIM_LATENCY_MS: SIM_LATENCY_MS must be a number')
  })
})
