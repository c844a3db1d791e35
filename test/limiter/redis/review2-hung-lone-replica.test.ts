import { afterEach, expect, it } from 'vitest'
import type { RedisLimiter } from '../../../src/limiter/redis/index.js'
import { needs } from '../../support/tools.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, heardByAll, key, opts, redisLimiter, sleep, testSettings } from './helpers.js'

// Review (ff7ed03): with the default leaseMs (5 s: staleMs 3.33 s) and commandTimeoutMs (2 s), a hung
// Redis (SIGSTOP; a network blackhole in production) is noticed 2 s after the first unanswered script:
// if that script left more than 1.33 s after the last heartbeat, the replica is "not fresh" and its
// `local` share is 0 for every key for the whole outage — even a lone replica serves nothing.
const redis = useRedis()
let limiters: RedisLimiter[] = []
afterEach(async () => {
  redis.thaw()
  await closeAll(limiters)
  limiters = []
})

it(`a lone replica in local fallback after a hung Redis still serves its key ${needs('redis-server')}`, async () => {
  const settings = testSettings(redis.url, { leaseMs: 5_000, commandTimeoutMs: 2_000, fallback: 'local' })
  let lastBeat = 0
  const a = await redisLimiter(settings, {
    replicaId: 'a',
    observer: { redisCommand: (name, _s, ok) => void (name === 'heartbeat' && ok && (lastBeat = performance.now())) },
  })
  limiters = [a]
  ;(await a.acquire(key, opts(2))).release()
  await heardByAll(redis.client(), settings.keyPrefix, 1, 20_000) // its run has lasted two heartbeats: it takes its slots
  const beat = lastBeat
  while (lastBeat === beat) await sleep(20) // a fresh heartbeat just answered
  await sleep(1_500)
  redis.freeze()
  const outcome = await a.acquire(key, opts(2, { deadlineMs: 8_000 })).then(
    (p) => {
      p.release()
      return 'served'
    },
    (err: unknown) => `refused: ${(err as Error).message}`,
  )
  expect({ mode: a.mode(), outcome }).toEqual({ mode: 'local', outcome: 'served' })
}, 40_000)
