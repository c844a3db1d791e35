import { afterEach, expect, it } from 'vitest'
import { semaphoreKeysOf, tagOf } from '../../../src/limiter/redis/keys.js'
import type { RedisLimiter } from '../../../src/limiter/redis/index.js'
import { rollBack, snapshot } from '../../support/rollback.js'
import { needs } from '../../support/tools.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, opts, redisLimiter, sleep, testSettings } from './helpers.js'

// A rollback without a reconnect (a proxy in front of Redis) that lost only this replica's release, on
// a key idle here since: no sync of the key can see it, but the heartbeat finds the registry older
// than its own last beat, and every key used within 3 leases is reconciled (docs/redis-limiter.md,
// "Failure modes"). Without that, the ghost holder keeps the key's only slot for its lease.

const redis = useRedis()
let limiters: RedisLimiter[] = []
afterEach(async () => {
  await closeAll(limiters)
  limiters = []
})

it(`a ghost holder of a key idle here is removed before its lease runs out ${needs('redis-server')}`, async () => {
  const settings = testSettings(redis.url, { leaseMs: 6_000 }) // a heartbeat every 2 s
  const a = await redisLimiter(settings, { replicaId: 'a' })
  limiters = [a]
  const client = redis.client()
  const rk = semaphoreKeysOf(settings.keyPrefix, tagOf(key))
  const permit = await a.acquire(key, opts(1))
  const copy = await snapshot(client, settings.keyPrefix) // what a failover would promote: the permit held
  permit.release()
  await eventually(async () => (await client.zcard(rk.holders)) === 0, 5_000, 'released')
  await eventually(() => a.tracked().keys === 0, 5_000, 'the key forgotten here')
  await sleep(2_300) // a heartbeat ran after the copy was taken
  await rollBack(client, settings.keyPrefix, copy) // the release is lost; the connection stays up
  const [ghost, expiry] = await client.zrange(rk.holders, 0, -1, 'WITHSCORES')
  expect(ghost, 'the ghost holder is back').toBeDefined()
  await eventually(async () => (await client.zcard(rk.holders)) === 0, 6_000, 'the ghost holder removed')
  const [s, us] = await client.time()
  expect(Number(s) * 1_000 + Math.floor(Number(us) / 1_000), 'removed, not expired').toBeLessThan(Number(expiry))
})
