import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { until } from '../support/http.js'

const DEMO_JS = fileURLToPath(new URL('../../dist/demo/main.js', import.meta.url))

/**
 * `npm run demo` as README's quick start runs it: the first request's answer, the side-by-side burst,
 * curl lines that work as printed, and a clean stop on Ctrl-C. Ports 0, so it runs beside anything.
 */
describe('npm run demo', () => {
  it('shows a request through sluice and the burst, prints curl lines that work, and stops on SIGINT', async () => {
    const child = spawn(process.execPath, [DEMO_JS], {
      env: { PATH: process.env.PATH ?? '', SLUICE_PORT: '0', SLUICE_ADMIN_PORT: '0', SIM_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    try {
      await until(
        () => stdout.includes('Both stay up until Ctrl-C') || child.exitCode !== null,
        'the demo to be up',
        30_000,
      )
      expect(stderr).toBe('')

      // the first screen: the curl line and the sim's answer through sluice
      const first =
        /^\$ curl -u demo-org:demo-key (http:\/\/127\.0\.0\.1:\d+\/v2\/accounts\/1001\/contacts)\n(.*)\n\(200;/m.exec(
          stdout,
        )
      expect(first, stdout).not.toBeNull()
      expect(JSON.parse(first![2]!)).toMatchObject({
        method: 'GET',
        path: '/accounts/1001/contacts',
        instance: 'demo-org',
        endpoint: 'GET /accounts/{id}/contacts',
        limit: 5,
      })

      const row = (label: string): string[] => {
        const line = stdout.split('\n').find((l) => l.trimStart().startsWith(label))
        expect(line, label).toBeDefined()
        return line!.split('│').map((c) => c.trim())
      }
      expect(Number(row('429 Too Many Requests')[1])).toBeGreaterThan(0)
      expect(row('429 Too Many Requests')[2]).toBe('0')
      expect(row('2xx answers')[2]).toBe('60')
      expect(row('most in progress at the API')[2]).toBe('/accounts/search: 1, /accounts/{id}/contacts: 5')

      // the learning screen: the API keeps a limit of 2 to itself; the last wave draws no 429, every answer is 200
      const waves = stdout
        .split('\n')
        .filter((l) => /^\s+\d+\s+│/.test(l))
        .map((l) => l.split('│').map((c) => c.trim()))
      expect(waves.length, stdout).toBe(4)
      for (const w of waves) expect(w[3]).toBe('20')
      expect(waves.at(-1)!.slice(1, 3)).toEqual(['0', '2 (learned)'])

      // the curl lines, run as printed (user:password is Basic auth)
      const lines = stdout.split('\n').filter((l) => l.trimStart().startsWith('curl '))
      expect(lines.length).toBeGreaterThanOrEqual(5)
      const auth = `Basic ${Buffer.from('demo-org:demo-key').toString('base64')}`
      const urlOf = (line: string): string => /(http:\/\/\S+)/.exec(line)![1]!
      const search = lines.find((l) => l.includes('/accounts/search'))!
      const res = await request(urlOf(search), {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json' },
        body: '{"searchFields":[]}',
      })
      expect(res.statusCode).toBe(200)
      expect(await res.body.json()).toMatchObject({
        method: 'POST',
        endpoint: 'POST /accounts/search',
        body: '{"searchFields":[]}',
      })
      // a read of an endpoint of the catalog (README's examples use only those)
      const read = lines.find((l) => l.includes('/accounts/1001/contacts') && !l.includes('NEON-API-VERSION'))!
      const contacts = await request(urlOf(read), { headers: { authorization: auth } })
      expect(contacts.statusCode).toBe(200)
      expect(await contacts.body.json()).toMatchObject({
        method: 'GET',
        endpoint: 'GET /accounts/{id}/contacts',
        limit: 5,
      })
      const retired = lines.find((l) => l.includes('NEON-API-VERSION: 2.1'))!
      const gone = await request(urlOf(retired), { headers: { authorization: auth, 'neon-api-version': '2.1' } })
      expect(gone.statusCode).toBe(410)
      expect(await gone.body.json()).toMatchObject([{ code: 'SLUICE_VERSION_RETIRED' }])
      const status = await request(urlOf(lines.find((l) => l.includes('/status'))!))
      expect(status.statusCode).toBe(200)
      await status.body.dump()

      child.kill('SIGINT')
      expect(await exited).toBe(0)
      expect(stdout).toContain('stopping sluice and the sim')
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL')
    }
  })
})
