import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { MAIN_JS } from '../support/process.js'

// README "Settings": a setting's error names where the bad value came from — the env var, or the
// file and key — whatever else is configured: an env var that replaces a record of the file, a
// record only partly given, a key deep inside a record. Through the real start: exit 78, one line.

/** `node dist/main.js` to its exit with these SLUICE_* vars (killed after 15 s: a start that does not fail fails the test). */
async function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [MAIN_JS], {
    env: { PATH: process.env.PATH ?? '', SLUICE_HOST: '127.0.0.1', SLUICE_ADMIN_HOST: '127.0.0.1', SLUICE_PORT: '0', SLUICE_ADMIN_PORT: '0', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  const [code] = (await once(child, 'exit')) as [number | null]
  clearTimeout(timer)
  return { code, stderr }
}

/** The one line a failed start prints (and its exit code, 78). */
async function refusal(env: Record<string, string>): Promise<string> {
  const { code, stderr } = await start(env)
  expect(code).toBe(78)
  const lines = stderr.split('\n').filter((l) => l !== '')
  expect(lines).toHaveLength(1)
  return lines[0]!
}

const settingsFile = (yaml: string): string => {
  const file = join(mkdtempSync(join(tmpdir(), 'sluice-source-')), 'sluice.yaml')
  writeFileSync(file, yaml)
  return file
}

const NEEDS_MAX_QUEUED = "needs maxQueued as well (it bounds the scan past a capped app's waiters)"

describe('a bad setting is reported with the source its value came from', () => {
  it('an env var record that replaces the file\'s: the env var, not the file key it replaced', async () => {
    const file = settingsFile('fairness:\n  apps:\n    reporting:\n      maxHeld: 2\n      maxQueued: 5\n')
    expect(await refusal({ SLUICE_CONFIG: file, SLUICE_FAIRNESS_APPS: '{"reporting":{"maxHeld":2}}' })).toBe(
      `sluice: invalid setting: fairness.apps.reporting.maxHeld (env SLUICE_FAIRNESS_APPS): ${NEEDS_MAX_QUEUED}; got 2`,
    )
  })

  it('a record partly in the file, partly in the env var: the env var replaced it whole, so it is named', async () => {
    const file = settingsFile('fairness:\n  apps:\n    reporting:\n      maxQueued: 5\n    batch:\n      weight: 2\n')
    expect(await refusal({ SLUICE_CONFIG: file, SLUICE_FAIRNESS_APPS: '{"reporting":{"maxHeld":0}}' })).toBe(
      'sluice: invalid setting: fairness.apps.reporting.maxHeld (env SLUICE_FAIRNESS_APPS): Too small: expected number to be >0; got 0',
    )
  })

  it('an unknown key deep inside the env var record, with the same record in the file', async () => {
    const file = settingsFile('fairness:\n  apps:\n    reporting:\n      weight: 2\n')
    expect(await refusal({ SLUICE_CONFIG: file, SLUICE_FAIRNESS_APPS: '{"reporting":{"weight":2,"maxheld":3}}' })).toBe(
      'sluice: invalid setting: unknown setting in fairness.apps.reporting: maxheld (env SLUICE_FAIRNESS_APPS, key fairness.apps.reporting.maxheld)',
    )
  })

  it('a bad value in the file next to settings the env sets: still the file and its key', async () => {
    const file = settingsFile('fairness:\n  interactiveBoost: 2\n  apps:\n    reporting:\n      maxHeld: 2\n')
    expect(await refusal({ SLUICE_CONFIG: file, SLUICE_FAIRNESS_INTERACTIVE_BOOST: '3', SLUICE_FAIRNESS_DEFAULT_WEIGHT: '2' })).toBe(
      `sluice: invalid setting: fairness.apps.reporting.maxHeld (file ${file}, key fairness.apps.reporting.maxHeld): ${NEEDS_MAX_QUEUED}; got 2`,
    )
  })

  it('a bad env value over a good one of the file, and a bad one of both kinds at once', async () => {
    const file = settingsFile('queue:\n  maxWaitMs: 1000\nfairness:\n  default:\n    maxHeld: 3\n')
    expect(await refusal({ SLUICE_CONFIG: file, SLUICE_QUEUE_MAX_WAIT_MS: '0', SLUICE_FAIRNESS_DEFAULT_MAX_QUEUED: '-1' })).toBe(
      'sluice: invalid settings: queue.maxWaitMs (env SLUICE_QUEUE_MAX_WAIT_MS): Too small: expected number to be >0; got 0; ' +
        'fairness.default.maxQueued (env SLUICE_FAIRNESS_DEFAULT_MAX_QUEUED): Too small: expected number to be >0; got -1',
    )
  })
})
