import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { MAIN_JS } from '../support/process.js'

// Injection without app identity, and app files that cannot be used, stop the start with one line
// and exit code 78 (README "Apps: identity, access and keys").

function start(env: Record<string, string>): { status: number | null; stderr: string } {
  const run = spawnSync(process.execPath, [MAIN_JS], {
    env: {
      PATH: process.env.PATH ?? '',
      SLUICE_HOST: '127.0.0.1',
      SLUICE_ADMIN_HOST: '127.0.0.1',
      SLUICE_PORT: '0',
      SLUICE_ADMIN_PORT: '0',
      ...env,
    },
    encoding: 'utf8',
    timeout: 15_000,
  })
  return { status: run.status, stderr: run.stderr }
}

describe('start-up refusals of app identity and injection', () => {
  it('injection on with app identity off', () => {
    const run = start({ SLUICE_CREDENTIALS_INJECT: 'true', SLUICE_ORG_KEY_1001: 'never-printed-key-77' })
    expect(run.status).toBe(78)
    expect(run.stderr.trim()).toBe(
      'sluice: invalid setting: credentials.inject (env SLUICE_CREDENTIALS_INJECT): needs apps.enabled (SLUICE_APPS_ENABLED) on: without app identity anyone could use the keys; got true',
    )
    expect(run.stderr).not.toContain('never-printed-key-77')
  })

  it('an app file that is not valid names the file and the key, never a value', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-apps-'))
    try {
      const file = join(dir, 'apps.yaml')
      writeFileSync(file, 'web:\n  tokens: ["plain-text-token-88"]\n  orgs: ["1001"]\n')
      const run = start({ SLUICE_APPS_ENABLED: 'true', SLUICE_APPS_FILE: file })
      expect(run.status).toBe(78)
      expect(run.stderr).toContain(`apps.file (SLUICE_APPS_FILE): ${file}: #1.tokens.0: a token hash`)
      expect(run.stderr).not.toContain('plain-text-token-88')
      expect(run.stderr.trim().split('\n')).toHaveLength(1)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
