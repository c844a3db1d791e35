import { describe, expect, it } from 'vitest'
import type { LimiterMode, Permit } from '../../../src/limiter/types.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { localShare } from '../../../src/limiter/redis/local-share.js'
import { closeAll, eventually, key, opts, redisLimiter, sleep, testSettings, heardByAll } from './helpers.js'
import { needs } from '../../support/tools.js'

const redis = useRedis({ each: true })

async function holdersInRedis(settings: { keyPrefix: string }): Promise<number> {
  return (await leftInRedis(redis.client(), settings.keyPrefix)).holders
}

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `redis limiter: fallback while Redis is unreachable ${needs('redis-server')}`,
  () => {
    it('local: starts without Redis, takes no slot (a replica that never heard the registry cannot know the others), then its queue moves into Redis', async () => {
      await redis.stop()
      const settings = testSettings(redis.url, { fallback: 'local' })
      const modes: LimiterMode[] = []
      const limiter = await redisLimiter(settings, { observer: { modeChanged: (m) => modes.push(m) } })
      expect(limiter.mode()).toBe('local')
      expect(limiter.ready()).toBe(true)
      const permits: Permit[] = []
      const waits = [1, 2, 3].map(() => limiter.acquire(key, opts(2)).then((p) => permits.push(p)))
      await sleep(100)
      expect(permits).toEqual([])
      expect((await limiter.status()).keys).toEqual([expect.objectContaining({ inFlight: 0, queued: 3 })])

      await redis.start()
      await eventually(() => limiter.mode() === 'redis', 10_000, 'back to redis')
      expect(modes).toEqual(['local', 'redis'])
      // the local waiters wait in the Redis queue, oldest first: two granted there, one queued
      await eventually(() => permits.length === 2, 5_000, 'two granted by Redis')
      expect(await holdersInRedis(settings)).toBe(2)
      permits[0]!.release()
      await Promise.all(waits)
      for (const p of permits.slice(1)) p.release()
      await eventually(async () => (await holdersInRedis(settings)) === 0, 5_000, 'no holders left')
      await limiter.close()
    })

    it('local: each replica takes its share of the limit (the slots a rendezvous hash of key, slot and replica gives it)', async () => {
      const settings = testSettings(redis.url, { fallback: 'local' })
      const limiters = [await redisLimiter(settings), await redisLimiter(settings), await redisLimiter(settings)]
      // let every replica see the others through the heartbeat registry
      await eventually(
        async () => (await Promise.all(limiters.map((l) => l.status()))).every((s) => s.details?.replicas === 3),
        5_000,
        'three replicas',
      )
      await heardByAll(redis.client(), settings.keyPrefix, 3) // each takes its slots only then
      await redis.stop()
      await eventually(() => limiters.every((l) => l.mode() === 'local'), 5_000, 'local mode')
      const live = limiters.map((l) => l.replicaId)
      const shareOf = (l: (typeof limiters)[number]) => localShare(5, key, l.replicaId, { live, claims: true })
      const a = limiters.find((l) => shareOf(l) > 0) // the slots the hash gives it (5 in all)
      const share = shareOf(a!)
      const first = await Promise.all(Array.from({ length: share }, () => a!.acquire(key, opts(5))))
      let second: Permit | undefined
      const waiting = a!.acquire(key, opts(5)).then((p) => (second = p))
      await sleep(50)
      expect(second).toBeUndefined()
      first[0]!.release()
      await waiting
      for (const p of [...first.slice(1), second!]) p.release()
      await closeAll(limiters)
    })

    it('local: permits Redis granted before it went away still count against the local limit', async () => {
      const settings = testSettings(redis.url, { fallback: 'local' })
      const limiter = await redisLimiter(settings)
      expect(limiter.mode()).toBe('redis')
      const fromRedis = [await limiter.acquire(key, opts(2)), await limiter.acquire(key, opts(2))]
      await heardByAll(redis.client(), settings.keyPrefix, 1) // it takes its local slots only then
      await redis.stop()
      await eventually(() => limiter.mode() === 'local', 5_000, 'local mode')
      let local: Permit | undefined
      const waiting = limiter.acquire(key, opts(2)).then((p) => (local = p))
      await sleep(50)
      expect(local).toBeUndefined() // both local slots are taken by the requests still in flight
      fromRedis[0]!.release()
      await waiting
      fromRedis[1]!.release()
      local!.release()
      expect((await limiter.status()).keys).toEqual([])
      await limiter.close()
    })

    it('open: forwards without limits while Redis is away, and Redis counts those requests when it is back', async () => {
      await redis.stop()
      const settings = testSettings(redis.url, { fallback: 'open' })
      const limiter = await redisLimiter(settings)
      expect(limiter.mode()).toBe('open')
      const permits = await Promise.all([1, 2, 3].map(() => limiter.acquire(key, opts(1))))
      await redis.start()
      await eventually(() => limiter.mode() === 'redis', 10_000, 'back to redis')
      expect(await holdersInRedis(settings)).toBe(3)
      let next: Permit | undefined
      const waiting = limiter.acquire(key, opts(1)).then((p) => (next = p))
      permits[0]!.release()
      permits[1]!.release()
      await sleep(50)
      expect(next).toBeUndefined() // still one of the open requests in flight
      permits[2]!.release()
      await waiting
      next!.release()
      await eventually(async () => (await holdersInRedis(settings)) === 0, 5_000, 'no holders left')
      await limiter.close()
    })

    it('closed: refuses with SLUICE_UNAVAILABLE until Redis answers, Ready from then on', async () => {
      await redis.stop()
      const settings = testSettings(redis.url, { fallback: 'closed' })
      const limiter = await redisLimiter(settings)
      expect(limiter.mode()).toBe('closed')
      expect(limiter.ready()).toBe(false) // never reached Redis: not Ready (a wrong setting stops the rollout)
      await expect(limiter.acquire(key, opts(1))).rejects.toMatchObject({ code: 'SLUICE_UNAVAILABLE', statusCode: 503 })
      const status = await limiter.status()
      expect(status).toMatchObject({
        backend: 'redis',
        mode: 'closed',
        details: { redis: 'unreachable', fallback: 'closed' },
      })
      await redis.start()
      await eventually(() => limiter.mode() === 'redis', 10_000, 'back to redis')
      expect(limiter.ready()).toBe(true)
      ;(await limiter.acquire(key, opts(1))).release()
      await limiter.close()
    })

    it('waiters queued in Redis when it goes away are served by the fallback', async () => {
      const settings = testSettings(redis.url, { fallback: 'closed' })
      const limiter = await redisLimiter(settings)
      const held = await limiter.acquire(key, opts(1))
      const waiting = limiter.acquire(key, opts(1)).catch((err: unknown) => err)
      await eventually(async () => (await limiter.status()).keys[0]?.queued === 1, 5_000, 'queued')
      await redis.stop()
      expect(await waiting).toMatchObject({ code: 'SLUICE_UNAVAILABLE' })
      held.release() // never throws, even with Redis gone
      await limiter.close()
    })
  },
)
