import { spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadSettings, unknownEnvVars } from '../../src/config/load.js'
import { problemsOf } from '../support/config-problems.js'
import { MAIN_JS } from '../support/process.js'

describe('settings: defaults < file < env, validated once, errors name the key', () => {
  it('env overrides the file, which overrides the defaults', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-config-'))
    const file = join(dir, 'sluice.yaml')
    writeFileSync(file, 'port: 7000\nqueue:\n  maxLength: 10\n  maxWaitMs: 2000\nlimits:\n  overrides:\n    "GET /accounts/{id}/memberships": 2\n')
    const s = loadSettings({ SLUICE_CONFIG: file, SLUICE_QUEUE_MAX_WAIT_MS: '3000' })
    expect(s.port).toBe(7000)
    expect(s.queue).toEqual({ maxLength: 10, maxShare: 0.5, maxWaitMs: 3000, waitHeader: 'x-sluice-max-wait' })
    expect(s.limits.overrides).toEqual({ 'GET /accounts/{id}/memberships': 2 })
    expect(s.adminPort).toBe(9090)
    expect(s.upstream).toBe('https://api.neoncrm.com/v2')
  })

  it('names the env var and the setting of each bad value', () => {
    expect(problemsOf({ SLUICE_PORT: 'eighty', SLUICE_QUEUE_MAX_LENGTH: '-1', SLUICE_REDIS_FALLBACK: 'maybe' })).toEqual([
      'port (env SLUICE_PORT): Invalid input: expected number, received string; got "eighty"',
      'queue.maxLength (env SLUICE_QUEUE_MAX_LENGTH): Too small: expected number to be >=0; got -1',
      'redis.fallback (env SLUICE_REDIS_FALLBACK): Invalid option: expected one of "local"|"open"|"closed"; got "maybe"',
    ])
  })

  it('refuses unknown keys in the file instead of ignoring a typo', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-config-'))
    const file = join(dir, 'sluice.yaml')
    writeFileSync(file, 'queue:\n  maxLenght: 10\n')
    expect(problemsOf({ SLUICE_CONFIG: file })).toEqual([`unknown setting in queue: maxLenght (file ${file}, key queue.maxLenght)`])
  })

  it('lists SLUICE_ variables that are no setting (logged at start; Kubernetes adds SLUICE_SERVICE_HOST and friends)', () => {
    expect(unknownEnvVars({ SLUICE_QUEUE_MAXLENGTH: '3', SLUICE_SERVICE_HOST: '10.0.0.1', SLUICE_PORT: '1', SLUICE_CONFIG: 'x', OTHER: '1' })).toEqual([
      'SLUICE_QUEUE_MAXLENGTH',
      'SLUICE_SERVICE_HOST',
    ])
  })

  it('a missing or malformed file is an error naming SLUICE_CONFIG', () => {
    expect(() => loadSettings({ SLUICE_CONFIG: '/nonexistent/sluice.yaml' })).toThrow(/^SLUICE_CONFIG: cannot read \/nonexistent\/sluice.yaml/)
    const dir = mkdtempSync(join(tmpdir(), 'sluice-config-'))
    writeFileSync(join(dir, 'bad.yaml'), 'port: [1,\n')
    expect(() => loadSettings({ SLUICE_CONFIG: join(dir, 'bad.yaml') })).toThrow(/is not valid YAML/)
  })

  it('the real process stops at start with exit code 78 and the key in its message', () => {
    const run = spawnSync(process.execPath, [MAIN_JS], {
      env: { PATH: process.env.PATH, SLUICE_UPSTREAM: 'ftp://example.com', SLUICE_PORT: '0', SLUICE_ADMIN_PORT: '0' },
      encoding: 'utf8',
      timeout: 15_000,
    })
    expect(run.status).toBe(78)
    expect(run.stderr).toBe('sluice: invalid setting: upstream (env SLUICE_UPSTREAM): Invalid URL; got "ftp://example.com"\n')
  })
})
