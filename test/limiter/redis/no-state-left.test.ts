import { describe, expect, it } from 'vitest'
import { semaphoreKeysOf, tagOf } from '../../../src/limiter/redis/keys.js'
import type { SluicePermit } from '../../../src/limiter/redis/ticket.js'
import type { Permit } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, opts, redisLimiter, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

const redis = useRedis({ each: true })
const NOTHING = { keys: 0, waiting: 0, pins: 0, unshared: 0 }

describe('redis limiter: no per-key state kept in a replica after its last request', () => {
  it('after a permit whose lease was lost (found by a sync) and the rest released', async () => {
    const settings = testSettings(redis.url, { leaseMs: 600 })
    const a = await redisLimiter(settings)
    const inspect = redis.client()
    const permit = (await a.acquire(key, opts(1))) as SluicePermit
    if (permit.grant.kind !== 'redis') throw new Error('expected a Redis permit')
    await inspect.zrem(semaphoreKeysOf(settings.keyPrefix, tagOf(key)).holders, permit.grant.id)
    await eventually(() => permit.lost.aborted, 5_000, 'the loss found by a sync')
    // the sync that found the loss left nothing held: the key is forgotten then, not at the next request
    await eventually(() => a.tracked().keys === 0, 5_000, 'the key forgotten')
    permit.release()
    expect(a.tracked()).toEqual(NOTHING)
    await a.close()
  })

  it('after grants, hand-overs, aborts and queue timeouts on two replicas', async () => {
    const settings = testSettings(redis.url)
    const a = await redisLimiter(settings)
    const b = await redisLimiter(settings)
    const work: Promise<void>[] = []
    for (let i = 0; i < 60; i++) {
      const limiter = i % 2 ? a : b
      const abort = new AbortController()
      const k = { instance: `org${i % 3}`, endpoint: 'POST /accounts/search' }
      work.push(
        limiter.acquire(k, opts(1, { signal: abort.signal, deadlineMs: i % 7 === 0 ? 1 : 10_000 })).then(
          (p: Permit) => void setTimeout(() => p.release(), 2),
          () => undefined,
        ),
      )
      if (i % 5 === 0) abort.abort()
    }
    await Promise.all(work)
    await eventually(() => a.tracked().keys === 0 && b.tracked().keys === 0, 5_000, 'every key forgotten')
    expect([a.tracked(), b.tracked()]).toEqual([NOTHING, NOTHING])
    await closeAll([a, b])
  })

  it.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
    `after an outage in the local fallback and the way back ${needs('redis-server')}`,
    async () => {
      const settings = testSettings(redis.url, { fallback: 'local' })
      const a = await redisLimiter(settings)
      const held = await a.acquire(key, opts(1)) // pinned during the outage
      await redis.stop()
      await eventually(
        async () => {
          await a.status()
          return a.mode() === 'local'
        },
        5_000,
        'local',
      )
      const waiting = a.acquire(key, opts(1, { deadlineMs: 20_000 }))
      await redis.start()
      await eventually(() => a.mode() === 'redis', 10_000, 'back to redis')
      held.release()
      ;(await waiting).release()
      await eventually(() => a.tracked().keys === 0, 5_000, 'every key forgotten')
      expect(a.tracked()).toEqual(NOTHING)
      await a.close()
    },
  )
})
