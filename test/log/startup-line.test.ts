import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tokenHash } from '../support/apps.js'
import { spawnProxy, type ProxyProcess } from '../support/process.js'

// The one start-up line says what was loaded (docs/observability.md, "What was loaded"), never a secret.

const TOKEN_WEB = 'app-token-web-start-9c1e77'
const TOKEN_BATCH = 'app-token-batch-start-4f02aa'
const KEY_FILE = 'api-key-1001-file-0b5e21'
const KEY_ENV = 'api-key-1002-env-77aa3c'
const PROXY_PASSWORD = 'start-line-proxy-pw'

let dir: string
let proxy: ProxyProcess

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-start-line-'))
  const keysDir = join(dir, 'keys')
  mkdirSync(keysDir)
  writeFileSync(join(keysDir, '1001'), KEY_FILE)
  writeFileSync(join(dir, 'apps.yaml'), `web:\n  tokens: ["${tokenHash(TOKEN_WEB)}"]\n  orgs: ["1001"]\n`)
  writeFileSync(
    join(dir, 'sluice.yaml'),
    [
      'apps:',
      '  enabled: true',
      `  file: ${join(dir, 'apps.yaml')}`,
      '  list:',
      `    batch: { tokens: ["${tokenHash(TOKEN_BATCH)}"], orgs: ["*"] }`,
      'credentials:',
      '  inject: true',
      `  keysDir: ${keysDir}`,
      'cache:',
      '  endpoints: ["GET /properties/countries", "GET /properties/states"]',
      'fairness:',
      '  apps:',
      '    batch: { class: batch, weight: 2 }',
      '    web: { class: interactive }',
      'versions:',
      '  retired: rewrite',
      '  missing: pin',
      '  pin: "2.10"',
      '',
    ].join('\n'),
  )
  proxy = await spawnProxy({
    SLUICE_CONFIG: join(dir, 'sluice.yaml'),
    SLUICE_UPSTREAM: 'https://api.example.com/v2',
    SLUICE_ORG_KEY_1002: KEY_ENV,
    // set, so the line does not depend on the machine's container limit
    SLUICE_MEMORY_BUDGET_BYTES: String(64 * 1024 * 1024),
    NODE_OPTIONS: '--max-old-space-size=300',
    HTTPS_PROXY: `http://egress:${PROXY_PASSWORD}@proxy.example:3128`,
  })
})

afterAll(async () => {
  await proxy?.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('the start-up line', () => {
  it('names the upstream, the forward proxy, the limiter, the apps and keys counted, the cached endpoints, the fairness classes and the version policy', () => {
    const lines = proxy
      .output()
      .split('\n')
      .filter((l) => l.includes('"sluice listening"'))
    expect(lines).toHaveLength(1)
    const { proxyUrl, adminUrl, level, time, pid, hostname, msg, ...loaded } = JSON.parse(lines[0]!) as Record<
      string,
      unknown
    >
    expect({ proxyUrl, adminUrl, level, msg }).toEqual({
      proxyUrl: proxy.url,
      adminUrl: proxy.adminUrl,
      level: 30,
      msg: 'sluice listening',
    })
    expect([typeof time, typeof pid, typeof hostname]).toEqual(['number', 'number', 'string'])
    expect(loaded).toEqual({
      upstream: 'https://api.example.com/v2',
      forwardProxy: 'proxy.example:3128 (HTTPS_PROXY, with credentials)',
      limiter: 'memory',
      memoryBudgetBytes: 64 * 1024 * 1024,
      heapBoundBytes: expect.any(Number) as unknown,
      apps: { identity: true, apps: 2, apiKeys: 2, keyFiles: 1 },
      cachedEndpoints: ['GET /properties/countries', 'GET /properties/states'],
      coalescing: true,
      fairness: { interactive: ['web'], batch: ['batch (weight 2)'], unlisted: 'interactive', interactiveBoost: 4 },
      versions: { calendar: 'built-in', retired: 'rewrite to next', missing: 'pin 2.10', gate: 'warn' },
      reload: { onSighup: ['apps.file', 'credentials.keysDir'], otherSettings: 'restart every replica' },
    })
    // V8's bound from NODE_OPTIONS: the old space's 300 MiB and the young generation
    const heapMiB = (loaded.heapBoundBytes as number) / 2 ** 20
    expect([heapMiB >= 300, heapMiB < 400]).toEqual([true, true])
  })

  it('holds no secret: no token, no API key, no proxy password', () => {
    for (const secret of [TOKEN_WEB, TOKEN_BATCH, KEY_FILE, KEY_ENV, PROXY_PASSWORD, tokenHash(TOKEN_WEB).slice(7)])
      expect(proxy.output()).not.toContain(secret)
  })
})
