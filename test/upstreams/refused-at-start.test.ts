import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { MAIN_JS } from '../support/process.js'

/*
 * An upstream list that cannot be served stops the real process before it listens: one line naming
 * the key and where it came from, exit code 78 (docs/upstreams.md, "Refused at start").
 */

/** Runs the real process to its exit (one that starts is killed after 15 s, and the test fails); returns the one line it wrote. */
async function refusal(env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [MAIN_JS], {
    env: {
      PATH: process.env.PATH ?? '',
      SLUICE_HOST: '127.0.0.1',
      SLUICE_ADMIN_HOST: '127.0.0.1',
      SLUICE_PORT: '0',
      SLUICE_ADMIN_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  let stdout = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  const [code] = (await once(child, 'exit')) as [number | null]
  clearTimeout(timer)
  expect(code).toBe(78)
  expect(stdout + stderr).not.toMatch(/\n\s+at /)
  const lines = stderr.split('\n').filter((l) => l !== '')
  expect(lines).toHaveLength(1)
  return lines[0]!
}

const upstreams = (list: unknown[]): Record<string, string> => ({ SLUICE_UPSTREAMS: JSON.stringify(list) })
const trial = { name: 'trial', prefix: '/trial/v2', url: 'https://trial.neoncrm.com/v2', profile: 'neon-v2' }

describe('an upstream list that cannot be served is refused at start', () => {
  it("a prefix equal to the CRM's, and one below another upstream's", async () => {
    expect(await refusal(upstreams([{ ...trial, prefix: '/V2' }]))).toBe(
      'sluice: invalid setting: upstreams.0.prefix (env SLUICE_UPSTREAMS): /V2 overlaps basePath /v2: every path must route to one upstream; got "/V2"',
    )
    expect(await refusal(upstreams([trial, { ...trial, name: 'other', prefix: '/trial/v2/x' }]))).toBe(
      'sluice: invalid setting: upstreams.1.prefix (env SLUICE_UPSTREAMS): /trial/v2/x overlaps upstreams.0.prefix /trial/v2: every path must route to one upstream; got "/trial/v2/x"',
    )
  })

  it('an upstream URL with credentials, masked', async () => {
    expect(await refusal(upstreams([{ ...trial, url: 'https://me:hunter2@trial.neoncrm.com/v2' }]))).toBe(
      'sluice: invalid setting: upstreams.0.url (env SLUICE_UPSTREAMS): must not hold credentials (user:password@): apps send their own Authorization; got "https://me:***@trial.neoncrm.com/v2"',
    )
  })

  it("two upstreams with one name, and the CRM's own name taken", async () => {
    expect(await refusal(upstreams([trial, { ...trial, prefix: '/t2' }]))).toBe(
      'sluice: invalid setting: upstreams.1.name (env SLUICE_UPSTREAMS): "trial" is already the name of upstreams.0; got "trial"',
    )
    expect(await refusal(upstreams([{ ...trial, name: 'neon' }]))).toBe(
      'sluice: invalid setting: upstreams.0.name (env SLUICE_UPSTREAMS): "neon" is already the name of the CRM\'s own upstream (upstream, basePath); got "neon"',
    )
  })

  it('an unknown profile', async () => {
    expect(await refusal(upstreams([{ ...trial, profile: 'neon-v3' }]))).toBe(
      'sluice: invalid setting: upstreams.0.profile (env SLUICE_UPSTREAMS): no such profile; there are neon-v2, github-rest; got "neon-v3"',
    )
  })

  it('a catalog that does not parse: inline, and a file named in the settings file', async () => {
    expect(
      await refusal(upstreams([{ name: 'x', prefix: '/x', url: 'https://x.example', catalog: { default: 0 } }])),
    ).toBe(
      'sluice: invalid setting: upstreams.0.catalog.default (env SLUICE_UPSTREAMS): the limit of every path not listed, a whole number ≥ 1 (e.g. default: 4); got 0',
    )
    const dir = mkdtempSync(join(tmpdir(), 'sluice-upstreams-'))
    const catalog = join(dir, 'catalog.yaml')
    writeFileSync(catalog, 'default: 10\nendpoints:\n  - { method: GET, path: "no-slash", limit: 1 }\n')
    const settings = join(dir, 'sluice.yaml')
    writeFileSync(
      settings,
      `upstreams:\n  - name: x\n    prefix: /x\n    url: https://x.example\n    catalog: ${catalog}\n`,
    )
    expect(await refusal({ SLUICE_CONFIG: settings })).toBe(
      `sluice: invalid setting: upstreams.0.catalog (file ${settings}, key upstreams.0.catalog): the catalog ${catalog} is invalid: endpoints.0.path: a path template such as /accounts/{id}/contacts`,
    )
    writeFileSync(catalog, 'default: [10\n')
    expect(await refusal({ SLUICE_CONFIG: settings })).toMatch(
      new RegExp(
        `^sluice: invalid setting: upstreams\\.0\\.catalog \\(file ${settings.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}, key upstreams\\.0\\.catalog\\): the catalog .* is not valid YAML: `,
      ),
    )
  })
})
