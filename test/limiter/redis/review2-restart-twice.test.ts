import { afterEach, expect, it } from 'vitest'
import type { RedisLimiter } from '../../../src/limiter/redis/index.js'
import type { Permit } from '../../../src/limiter/types.js'
import { needs } from '../../support/tools.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, opts, redisLimiter, sleep, testSettings } from './helpers.js'

// Review (ff7ed03): Redis restarts empty (a crash loop; also a failover to a copy whose beats expired)
// and is lost again before the next heartbeat. The replica back first heard only itself, the other
// heard both, and neither started a new run (readings < 2 heartbeats apart): both claim.
const redis = useRedis()
let limiters: RedisLimiter[] = []
afterEach(async () => {
  await closeAll(limiters)
  limiters = []
})

it(`local shares after an empty restart and a second outage add up to no more than the limit ${needs('redis-server')}`, async () => {
  const settings = testSettings(redis.url, { leaseMs: 6_000 }) // a heartbeat every 2 s, staleMs 4 s
  limiters = await Promise.all([1, 2].map((i) => redisLimiter(settings, { replicaId: `r${i}` })))
  await eventually(() => limiters.every((l) => l.replicas() === 2), 5_000, 'both seeing two')
  await sleep(2_200) // each has heard the other beat since its run began: both claim
  await redis.stop() // SIGKILL: starts empty
  await eventually(() => limiters.every((l) => l.mode() === 'local'), 10_000, 'both in local')
  await redis.start()
  await eventually(() => limiters.every((l) => l.mode() === 'redis'), 10_000, 'both back')
  await redis.stop() // lost again, before either's next heartbeat
  await eventually(() => limiters.every((l) => l.mode() === 'local'), 10_000, 'both in local again')
  const gone = new AbortController()
  const keys = Array.from({ length: 40 }, (_, i) => ({ instance: `org${i}`, endpoint: 'POST /accounts/search' }))
  const granted = new Map<string, Permit[]>()
  for (const k of keys)
    for (const l of limiters)
      l.acquire(k, { ...opts(1), signal: gone.signal }).then(
        (p) => granted.set(k.instance, [...(granted.get(k.instance) ?? []), p]),
        () => {},
      )
  await sleep(300)
  const over = [...granted].filter(([, permits]) => permits.length > 1).map(([instance]) => instance)
  gone.abort()
  for (const permits of granted.values()) for (const p of permits) p.release()
  await redis.start()
  expect(over, 'limit-1 keys granted twice').toEqual([])
}, 40_000)
