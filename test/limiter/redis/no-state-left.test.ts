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
    expect(a.tracked()).toMatchObject(NOTHING)
    await a.close()
  })

  it('nothing remembered of keys idle as long as their Redis keys live (3 leases)', async () => {
    // many keys touched once (docs/benchmarks.md, "Many keys touched once"): the memos that spare a used
    // key a hash or an announcement go with the key's Redis keys, at the first sync after 3 leases
    const settings = testSettings(redis.url, { leaseMs: 600 })
    const a = await redisLimiter(settings)
    for (let i = 0; i < 40; i++)
      (await a.acquire({ instance: `org${i}`, endpoint: 'GET /contacts' }, opts(5))).release()
    await eventually(() => a.tracked().keys === 0, 5_000, 'every semaphore forgotten')
    // still worth keeping while the keys live in Redis: a key used again within 3 leases announces less
    expect(a.tracked().remembered).toBeGreaterThanOrEqual(40)
    await eventually(() => a.tracked().remembered === 0, 8_000, 'every memo of an idle key forgotten')
    expect(a.tracked()).toEqual({ ...NOTHING, remembered: 0 })
    // a key used again after that is served as a new one
    ;(await a.acquire({ instance: 'org1', endpoint: 'GET /contacts' }, opts(5))).release()
    await eventually(() => a.tracked().keys === 0, 5_000, 'forgotten again')
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
    expect(a.tracked()).toMatchObject(NOTHING)
    expect(b.tracked()).toMatchObject(NOTHING)
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
      expect(a.tracked()).toMatchObject(NOTHING)
      await a.close()
    },
  )
})
