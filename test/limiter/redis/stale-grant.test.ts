import { describe, expect, it } from 'vitest'
import { semaphoreKeysOf, tagOf } from '../../../src/limiter/redis/keys.js'
import type { Permit } from '../../../src/limiter/types.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { cuttable } from './cuttable.js'
import { eventually, key, opts, redisLimiter, sleep, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

const redis = useRedis()

/** Blocks the event loop, as a long garbage collection or SIGSTOP would. */
function stall(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy
  }
}

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `redis limiter: a grant read after a stall longer than the lease ${needs('redis-server')}`,
  () => {
    it('is not used when its lease was given away meanwhile: the request goes back to its place in the queue', async () => {
      const settings = testSettings(redis.url, { leaseMs: 600 })
      const a = await redisLimiter(settings)
      const inspect = redis.client()
      const keys = semaphoreKeysOf(settings.keyPrefix, tagOf(key))
      // another replica holds the only permit
      await inspect.zadd(keys.holders, Date.now() + 60_000, 'other/1')
      let permit: Permit | undefined
      const waiting = a.acquire(key, opts(1, { deadlineMs: 20_000 })).then((p) => (permit = p))
      await eventually(async () => (await leftInRedis(inspect, settings.keyPrefix)).queued === 1, 5_000, 'queued')
      const [id] = await inspect.zrange(keys.queue, 0, 0)

      // What happens in Redis while this replica is frozen for longer than the lease: its waiter is
      // granted (the message waits in its socket), the lease runs out unrenewed, is purged, and the
      // slot goes to another replica. Sent to a frozen Redis, run the moment it thaws — inside the stall.
      redis.freeze()
      void inspect
        .multi()
        .zrem(keys.queue, id!)
        .zrem(keys.holders, 'other/1')
        .zadd(keys.holders, Date.now() + 1_500, 'other/2')
        .publish(`${settings.keyPrefix}:grant:${a.replicaId}`, id!)
        .exec()
      await sleep(20) // the transaction is in Redis's socket
      redis.thaw()
      stall(900)

      // read after the stall, the grant is in doubt; Redis no longer counts it: queued again, by its age
      await eventually(
        async () => permit !== undefined || (await leftInRedis(inspect, settings.keyPrefix)).queued === 1,
        5_000,
        'the grant handled',
      )
      expect(permit).toBeUndefined()
      // other/2's lease runs out (nobody renews it) and the slot comes back to the request
      await waiting
      expect(await inspect.zscore(keys.holders, 'other/2')).toBeNull()
      permit!.release()
      await eventually(
        async () => (await leftInRedis(inspect, settings.keyPrefix)).holders === 0,
        5_000,
        'no holders left',
      )
      await a.close()
    })

    it('is used once renewed when Redis still counts it (its lease was never given away)', async () => {
      const settings = testSettings(redis.url, { leaseMs: 600 })
      const a = await redisLimiter(settings)
      const inspect = redis.client()
      const keys = semaphoreKeysOf(settings.keyPrefix, tagOf(key))
      await inspect.zadd(keys.holders, Date.now() + 60_000, 'other/1')
      const waiting = a.acquire(key, opts(1, { deadlineMs: 20_000 }))
      await eventually(async () => (await leftInRedis(inspect, settings.keyPrefix)).queued === 1, 5_000, 'queued')
      const [id] = await inspect.zrange(keys.queue, 0, 0)
      redis.freeze()
      // granted, its lease past expiry but still counted
      void inspect
        .multi()
        .zrem(keys.queue, id!)
        .zrem(keys.holders, 'other/1')
        .zadd(keys.holders, Date.now() - 1, id!)
        .publish(`${settings.keyPrefix}:grant:${a.replicaId}`, id!)
        .exec()
      await sleep(20)
      redis.thaw()
      stall(900)
      const permit = await waiting
      expect(Number(await inspect.zscore(keys.holders, id!))).toBeGreaterThan(Date.now()) // renewed
      permit.release()
      await eventually(
        async () => (await leftInRedis(inspect, settings.keyPrefix)).holders === 0,
        5_000,
        'no holders left',
      )
      await a.close()
    })
  },
)

describe('redis limiter: a grant message read before the acquire reply (the race rule, on a real Redis)', () => {
  it('the waiter gets its permit once the reply is in, and only one', async () => {
    const line = await cuttable(redis)
    try {
      const settings = testSettings(line.url)
      const a = await redisLimiter(settings)
      const inspect = redis.client()
      const keys = semaphoreKeysOf(settings.keyPrefix, tagOf(key))
      await inspect.zadd(keys.holders, Date.now() + 60_000, 'other/1')
      line.holdReplies() // a's script replies wait in the line; its grant messages do not
      let permit: Permit | undefined
      const waiting = a.acquire(key, opts(1)).then((p) => (permit = p))
      await eventually(async () => (await leftInRedis(inspect, settings.keyPrefix)).queued === 1, 5_000, 'queued')
      const [id] = await inspect.zrange(keys.queue, 0, 0)
      // another replica's release grants a's waiter: the message comes before the acquire's reply
      await inspect
        .multi()
        .zrem(keys.holders, 'other/1')
        .zrem(keys.queue, id!)
        .zadd(keys.holders, Date.now() + 60_000, id!)
        .publish(`${settings.keyPrefix}:grant:${a.replicaId}`, id!)
        .exec()
      await sleep(50) // (the message has been read)
      expect(permit).toBeUndefined()
      line.flow()
      await waiting
      expect(await inspect.zrange(keys.holders, 0, -1)).toEqual([id])
      permit!.release()
      await eventually(
        async () => (await leftInRedis(inspect, settings.keyPrefix)).holders === 0,
        5_000,
        'released once',
      )
      await a.close()
    } finally {
      await line.close()
    }
  })
})
