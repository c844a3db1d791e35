import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tokenHash } from '../support/apps.js'
import { until } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'

// The timer's re-read of apps.file says what changed, as SIGHUP's does (docs/observability.md,
// "What was loaded"); a re-read that found nothing new writes no line.

let dir: string
let appsFile: string
let proxy: RunningProxy

const app = (name: string): string => `${name}:\n  tokens: ["${tokenHash(`token-of-${name}`)}"]\n  orgs: ["*"]\n`

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-reload-timer-'))
  appsFile = join(dir, 'apps.yaml')
  writeFileSync(appsFile, app('web'))
  proxy = await startProxy({
    upstream: 'http://127.0.0.1:9/v2',
    apps: { enabled: true, file: appsFile, reloadIntervalMs: 100 },
  })
})

afterAll(async () => {
  await proxy?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("the timer's re-read of the app list", () => {
  it('one line naming the app added, none for the re-reads that found the same', async () => {
    writeFileSync(appsFile, app('web') + app('reports'))
    const reread = (): Record<string, unknown>[] =>
      proxy.logs.filter((l) => l.msg === 'app tokens and API keys re-read')
    await until(() => reread().length > 0, 'the re-read line')
    // several more re-reads of the same file
    const since = Date.now()
    await until(() => Date.now() - since > 500, 'a few more timer periods')
    expect(reread()).toHaveLength(1)
    expect(reread()[0]).toMatchObject({
      trigger: 'timer',
      apps: 2,
      appsAdded: ['reports'],
      appsRemoved: [],
      appsChanged: [],
      notReread: [],
    })
  })
})
