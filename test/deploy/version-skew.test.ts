import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnProxy, type ProxyProcess } from '../support/process.js'
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.js'
import { basicAuth, keyStats, startSim, type Sim } from '../support/sim.js'
import { send } from '../support/http.js'
import { buildRelease, previous, previousInHistory, previousMissingWhy } from '../support/previous-release.js'

/**
 * docs/deploy.md "Version skew": during a rolling upgrade the previous release (N−1) and this one run
 * side by side on one Redis, and the limit holds across them. The previous release is the newest
 * CHANGELOG.md entry with a commit (`## x.y.z — <commit>`); its tree comes from git (`git archive`,
 * nothing written to the repository) and is built in a temporary folder with this checkout's
 * node_modules. Skipped, saying so, where that commit is not in the history (a shallow clone).
 */

const SEARCH = 'POST /accounts/search' // limit 1

describe.skipIf(!previousInHistory)(
  `N−1 and N side by side on one Redis ${previousInHistory ? '' : `(skipped: ${previousMissingWhy})`}`,
  () => {
    let redis: TestRedis
    let sim: Sim
    let old: ProxyProcess
    let current: ProxyProcess

    beforeAll(async () => {
      const oldMain = join(buildRelease(previous!.commit), 'dist', 'main.js')
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
  },
)
