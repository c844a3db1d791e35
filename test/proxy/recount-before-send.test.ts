import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { startProxy, statusOf, type RunningProxy } from '../support/proxy.js'
import { uniquePrefix } from '../support/redis.js'
import { basicAuth, keyStats, startSim, type Sim } from '../support/sim.js'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js'
import { useRedis } from '../support/use-redis.js'
import { needs } from '../support/tools.js'

// Two replicas share a limit-1 key through a real redis-server. Replica 1's request A has its permit
// but is not written upstream yet: its one upstream connection is busy (a request the sim never
// answers), so undici holds A. Redis then loses its data (FLUSHALL), replica 2's request B is
// granted the slot that looks empty and goes upstream. Replica 1's next sync counts A's permit again;
// A's request was not sent, so it must not start: held back right before the write, it waits again
// at its place, behind B. The sim never sees two requests of the key in progress
// (docs/redis-limiter.md, "Failure modes"; LIMITER-CHECKLIST "Redis losing its data").

const SEARCH = 'POST /accounts/search'
const redis = useRedis()
let sim: Sim
let tcp: TcpProxy
let one: RunningProxy
let two: RunningProxy

beforeAll(async () => {
  sim = await startSim({ latencyMs: 0 })
  // replica 1 reaches the sim through a TCP proxy the test can cut, on one upstream connection
  tcp = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(sim.url).port) })
  const redisSettings = { url: redis.url, keyPrefix: uniquePrefix('recount'), leaseMs: 1_000 }
  one = await startProxy({ upstream: `http://127.0.0.1:${tcp.port}/v2`, upstreamConnections: 1, redis: redisSettings })
  two = await startProxy({ upstream: sim.apiUrl, redis: redisSettings })
})
afterAll(async () => {
  await one?.close()
  await two?.close()
  await tcp?.close()
  await sim?.close()
})

const search = (headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { authorization: basicAuth('org1'), 'content-type': 'application/json', ...headers },
  body: '{}',
})

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `a permit counted again after Redis lost its data, before its request was sent ${needs('redis-server')}`,
  () => {
    it('is held back and waits again at its place: the request granted meanwhile on the other replica goes upstream alone', async () => {
      // replica 1's only upstream connection, taken by a request the sim never answers
      const blocker = send(one.url, '/v2/accounts/7', {
        headers: { authorization: basicAuth('org9'), 'x-sim-hang': '1' },
      })
      await until(() => keyStats(sim, 'org9', 'GET /accounts/{id}')?.inProgress === 1, 'the blocker upstream')
      // A: granted on replica 1, waiting in undici for the connection
      const a = send(one.url, '/v2/accounts/search', search())
      await until(async () => (await statusOf(one, 'org1', SEARCH))?.inFlight === 1, "A's permit granted")
      expect(keyStats(sim, 'org1', SEARCH)).toBeUndefined()

      await redis.client().flushall() // this test's own server: as a restart without persistence does
      // B: replica 2 finds the slot empty and goes upstream
      const b = send(two.url, '/v2/accounts/search', search({ 'x-sim-delay-ms': '3000' }))
      await until(() => keyStats(sim, 'org1', SEARCH)?.inProgress === 1, 'B upstream')
      // replica 1's next sync (a third of a lease) finds that Redis lost its data
      await until(
        () => one.logs.some((l) => l.level === 40 && l.instance === 'org1' && l.endpoint === SEARCH),
        "replica 1's sync after the loss",
      )

      tcp.cut() // the blocker's connection goes: undici now starts A on a new one
      expect((await blocker).status).toBe(502)
      expect((await a).status).toBe(200)
      expect((await b).status).toBe(200)
      const stats = keyStats(sim, 'org1', SEARCH)!
      expect({ requests: stats.requests, maxAttempted: stats.maxAttempted, rejected429: stats.rejected429 }).toEqual({
        requests: 2,
        maxAttempted: 1,
        rejected429: 0,
      })
      // held back right before the write, then forwarded once B was done
      expect(one.logs.filter((l) => l.at === 'send').map((l) => [l.level, l.msg])).toEqual([
        [
          40,
          'proxy: the permit may have run out before the request was sent (the process stalled, or Redis lost its data); given back, the request waits again at its place',
        ],
      ])
    })
  },
)
