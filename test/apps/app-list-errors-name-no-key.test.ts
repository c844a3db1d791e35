import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAIN_JS } from '../support/process.js'
import { startProxy } from '../support/proxy.js'

// A token pasted as the key of an app (where its name belongs) is never echoed by the errors about
// the app list: at start (apps.list in the settings file or its env var, apps.file) and when
// apps.file is re-read. They name the app by its place, `#2` (README "Apps: identity, access and keys").

const TOKEN = '5f0c9a7e3b2d41e8a6c0f9d2b7e4a1c35f0c9a7e3b2d41e8a6c0f9d2b7e4a1c3'
const ODD_TOKEN = 'tok/Zq8w3N1+vR7pL2xK=='
const HASH = 'sha256:' + createHash('sha256').update('a-real-token').digest('hex')
const TOKEN_HASH_MESSAGE = 'a token hash `sha256:<64 lower-case hex>` or `sha512:<128 lower-case hex>`'

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-app-keys-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

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

const file = (name: string, text: string): string => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

describe('errors about the app list name no key', () => {
  it('apps.list in the settings file: a bad app by its place, a bad name, an unknown setting', () => {
    const settings = file(
      'settings.yaml',
      [
        'apps:',
        '  enabled: true',
        '  list:',
        '    web:',
        `      tokens: ["${HASH}"]`,
        '      orgs: ["1001"]',
        `    ${TOKEN}:`,
        `      tokens: ["${TOKEN}"]`,
        '      orgs: ["1001"]',
        '      endpoint: [GET]',
        `    "${ODD_TOKEN}":`,
        `      tokens: ["${HASH}"]`,
        '      orgs: ["1001"]',
        '',
      ].join('\n'),
    )
    const run = start({ SLUICE_CONFIG: settings })
    expect(run.status).toBe(78)
    expect(run.stderr).toBe(
      `sluice: invalid settings: apps.list.#2.tokens.0 (file ${settings}, key apps.list.#2.tokens.0): ${TOKEN_HASH_MESSAGE}; got "***"; ` +
        `unknown setting in apps.list.#2: endpoint (file ${settings}, key apps.list.#2.endpoint); ` +
        `apps.list.#3 (file ${settings}, key apps.list.#3): an app name of 1-64 letters, digits, \`.\`, \`_\` or \`-\`\n`,
    )
  })

  it('apps.list in its env var, and a token pasted under apps itself', () => {
    const env = start({
      SLUICE_APPS_ENABLED: 'true',
      SLUICE_APPS_LIST: JSON.stringify({ [TOKEN]: { tokens: [], orgs: ['1001'] } }),
    })
    expect(env.status).toBe(78)
    expect(env.stderr).toBe(
      'sluice: invalid setting: apps.list.#1.tokens (env SLUICE_APPS_LIST): Too small: expected array to have >=1 items; got "***"\n',
    )
    const settings = file('misplaced.yaml', `apps:\n  enabeld: true\n  ${TOKEN}: {}\n`)
    const misplaced = start({ SLUICE_CONFIG: settings })
    expect(misplaced.status).toBe(78)
    expect(misplaced.stderr).toBe(
      `sluice: invalid setting: unknown settings in apps: enabeld, #2 (file ${settings}, key apps.enabeld, apps.#2)\n`,
    )
  })

  it('apps.file at start', () => {
    const apps = file(
      'apps.yaml',
      `web:\n  tokens: ["${HASH}"]\n  orgs: ["1001"]\n${TOKEN}:\n  tokens: ["${TOKEN}"]\n  orgs: ["1001"]\n  ${TOKEN}: 1\n`,
    )
    const run = start({ SLUICE_APPS_ENABLED: 'true', SLUICE_APPS_FILE: apps })
    expect(run.status).toBe(78)
    expect(run.stderr).toBe(
      `sluice: apps.file (SLUICE_APPS_FILE): ${apps}: #2.tokens.0: ${TOKEN_HASH_MESSAGE}; #2: unknown setting #3\n`,
    )
  })

  it('apps.file re-read: the warning names the place, and the apps loaded before stay', async () => {
    const apps = file('reloaded.yaml', `web:\n  tokens: ["${HASH}"]\n  orgs: ["1001"]\n`)
    const proxy = await startProxy({ apps: { enabled: true, file: apps, reloadIntervalMs: 3_600_000 } })
    try {
      writeFileSync(
        apps,
        `web:\n  tokens: ["${HASH}"]\n  orgs: ["1001"]\n${TOKEN}:\n  tokens: ["${HASH}"]\n  orgs: []\n`,
      )
      proxy.app.apps.reload()
      const warnings = proxy.logs.filter((l) => l.level === 40)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatchObject({
        setting: 'apps.file',
        problem: `apps.file (SLUICE_APPS_FILE): ${apps}: #2.orgs: Too small: expected array to have >=1 items`,
        msg: 'app tokens not reloaded; the ones loaded before stay in force',
      })
      expect(JSON.stringify(proxy.logs)).not.toContain(TOKEN)
    } finally {
      await proxy.close()
    }
  })
})
