import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnProxy, type ProxyProcess } from '../support/process.js'
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.js'
import { basicAuth, keyStats, startSim, type Sim } from '../support/sim.js'
import { send } from '../support/http.js'
import { REPO } from './chart.js'

/**
 * docs/deploy.md "Version skew": during a rolling upgrade the previous release (N−1) and this one run
 * side by side on one Redis, and the limit holds across them. The previous release is the newest
 * CHANGELOG.md entry with a commit (`## x.y.z — <commit>`); its tree comes from git (`git archive`,
 * nothing written to the repository) and is built in a temporary folder with this checkout's
 * node_modules. Skipped, saying so, where that commit is not in the history (a shallow clone).
 */

/** `## 0.1.0 — 879d1ac (…)`: the newest release with a commit, and its version. */
export function previousRelease(changelog: string): { version: string; commit: string } | undefined {
  const m = /^## (\d+\.\d+\.\d+) — ([0-9a-f]{7,40})\b/m.exec(changelog)
  return m === null ? undefined : { version: m[1]!, commit: m[2]! }
}

const previous = previousRelease(readFileSync(join(REPO, 'CHANGELOG.md'), 'utf8'))
const inHistory =
  previous !== undefined &&
  spawnSync('git', ['cat-file', '-e', `${previous.commit}^{commit}`], { cwd: REPO, stdio: 'ignore' }).status === 0
const why =
  previous === undefined
    ? 'CHANGELOG.md names no previous release with a commit'
    : `the previous release's commit ${previous.commit} is not in this clone's history (a shallow clone?)`

/** Builds the release's tree into a folder kept per commit (a second run reuses it). */
function buildRelease(commit: string): string {
  const dir = join(tmpdir(), `sluice-release-${commit}`)
  const main = join(dir, 'dist', 'main.js')
  if (existsSync(main)) return main
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  execFileSync('sh', ['-c', `git archive --format=tar ${commit} | tar -x -C "${dir}"`], { cwd: REPO })
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'))
  execFileSync(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: dir,
  })
  execFileSync(process.execPath, ['scripts/copy-assets.mjs'], { cwd: dir })
  return main
}

const SEARCH = 'POST /accounts/search' // limit 1

describe.skipIf(!inHistory)(`N−1 and N side by side on one Redis ${inHistory ? '' : `(skipped: ${why})`}`, () => {
  let redis: TestRedis
  let sim: Sim
  let old: ProxyProcess
  let current: ProxyProcess

  beforeAll(async () => {
    const oldMain = buildRelease(previous!.commit)
    redis = await startRedis()
    sim = await startSim({ latencyMs: 50 })
    const env = {
      SLUICE_UPSTREAM: sim.apiUrl,
      SLUICE_REDIS_URL: redis.url,
      SLUICE_REDIS_KEY_PREFIX: uniquePrefix('skew'),
      SLUICE_REQUEST_LOG: 'false',
    }
    ;[old, current] = await Promise.all([spawnProxy(env, 60_000, oldMain), spawnProxy(env, 60_000)])
  }, 300_000)

  afterAll(async () => {
    await Promise.all([old?.stop(), current?.stop()])
    await sim?.close()
    await redis?.close()
  })

  it(`holds a limit-1 endpoint at 1 across ${previous?.version ?? 'N−1'} and this build, and answers every request`, async () => {
    const body = { method: 'POST', body: '{}', headers: { authorization: basicAuth('org1') } }
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) => send((i % 2 === 0 ? old : current).url, '/v2/accounts/search', body)),
    )
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200))
    expect(keyStats(sim, 'org1', SEARCH)).toMatchObject({ requests: 24, maxInProgress: 1, rejected429: 0 })
  }, 120_000)
})
