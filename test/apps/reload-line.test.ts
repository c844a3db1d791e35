import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tokenHash } from '../support/apps.js'
import { until } from '../support/http.js'
import { spawnProxy, type ProxyProcess } from '../support/process.js'

// Each SIGHUP re-read is one line with the counts and what changed: app names and organisation
// ids, never a token or a key (docs/apps.md, "Keys that apps never hold"; docs/observability.md).

const TOKENS = {
  web: 'reload-web-1f0c',
  batch: 'reload-batch-77ad',
  reports: 'reload-reports-3e9b',
  webNext: 'reload-web-next-0a2c',
}
const KEYS = {
  k1001: 'reload-key-1001-aa01',
  k1001next: 'reload-key-1001-next-bb02',
  k1002: 'reload-key-1002-cc03',
  k1003: 'reload-key-1003-dd04',
}

const app = (name: string, tokens: string[]): string =>
  `${name}:\n  tokens: [${tokens.map((t) => `"${tokenHash(t)}"`).join(', ')}]\n  orgs: ["*"]\n`

let dir: string
let appsFile: string
let keysDir: string
let proxy: ProxyProcess

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-reload-line-'))
  appsFile = join(dir, 'apps.yaml')
  keysDir = join(dir, 'keys')
  mkdirSync(keysDir)
  writeFileSync(appsFile, app('web', [TOKENS.web]) + app('batch', [TOKENS.batch]))
  writeFileSync(join(keysDir, '1001'), KEYS.k1001)
  writeFileSync(join(keysDir, '1002'), KEYS.k1002)
  proxy = await spawnProxy({
    SLUICE_UPSTREAM: 'http://127.0.0.1:9/v2',
    SLUICE_APPS_ENABLED: 'true',
    SLUICE_APPS_FILE: appsFile,
    // only SIGHUP re-reads here: the line must not race the timer's re-read
    SLUICE_APPS_RELOAD_INTERVAL_MS: '3600000',
    SLUICE_CREDENTIALS_INJECT: 'true',
    SLUICE_CREDENTIALS_KEYS_DIR: keysDir,
  })
})

afterAll(async () => {
  await proxy?.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** The re-read lines so far, parsed. */
const reloadLines = (): Record<string, unknown>[] =>
  proxy
    .output()
    .split('\n')
    .filter((l) => l.includes('"app tokens and API keys re-read"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)

async function hangUp(): Promise<Record<string, unknown>> {
  const before = reloadLines().length
  proxy.child.kill('SIGHUP')
  await until(() => reloadLines().length > before, 'the re-read line')
  const { level, msg, time, pid, hostname, ...fields } = reloadLines()[before]!
  expect({ level, msg, others: reloadLines().length - before }).toEqual({
    level: 30,
    msg: 'app tokens and API keys re-read',
    others: 1,
  })
  expect([typeof time, typeof pid, typeof hostname]).toEqual(['number', 'number', 'string'])
  return fields
}

describe('the SIGHUP re-read line', () => {
  it('says when nothing changed', async () => {
    expect(await hangUp()).toEqual({
      trigger: 'SIGHUP',
      identity: true,
      apps: 2,
      apiKeys: 2,
      keyFiles: 2,
      appsAdded: [],
      appsRemoved: [],
      appsChanged: [],
      keysAdded: [],
      keysRemoved: [],
      keysChanged: [],
      notReread: [],
    })
  })

  it('names the apps and organisations added, removed and changed, with the counts after', async () => {
    writeFileSync(appsFile, app('web', [TOKENS.web, TOKENS.webNext]) + app('reports', [TOKENS.reports]))
    writeFileSync(join(keysDir, '1001'), KEYS.k1001next)
    unlinkSync(join(keysDir, '1002'))
    writeFileSync(join(keysDir, '1003'), KEYS.k1003)
    expect(await hangUp()).toEqual({
      trigger: 'SIGHUP',
      identity: true,
      apps: 2,
      apiKeys: 2,
      keyFiles: 2,
      appsAdded: ['reports'],
      appsRemoved: ['batch'],
      appsChanged: ['web'],
      keysAdded: ['1003'],
      keysRemoved: ['1002'],
      keysChanged: ['1001'],
      notReread: [],
    })
  })

  it('names the file it could not re-read, and keeps what was loaded', async () => {
    writeFileSync(appsFile, 'web: [not, an, app\n')
    expect(await hangUp()).toMatchObject({
      apps: 2,
      appsAdded: [],
      appsRemoved: [],
      appsChanged: [],
      notReread: ['apps.file'],
    })
  })

  it('holds no token, token hash or key', () => {
    const out = proxy.output()
    for (const secret of [
      ...Object.values(TOKENS),
      ...Object.values(KEYS),
      ...Object.values(TOKENS).map((t) => tokenHash(t).slice(7)),
    ])
      expect(out).not.toContain(secret)
  })
})
