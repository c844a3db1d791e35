import { afterEach, describe, expect, it } from 'vitest'
import { createRedisLimiter, type RedisLimiter } from '../../../src/limiter/redis/index.js'
import { needs } from '../../support/tools.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, memoryLog, opts, sleep, testSettings } from './helpers.js'

// A key with waiters and no grant for longer than a lease is stuck (a ghost holding it, a request
// upstream for longer than a lease): `/status` marks it with `stuckMs` and names who holds it and how
// old each holder's request is, `details.stuckKeys` counts it (the `sluice_keys_stuck` gauge), and
// it is logged once per spell (docs/redis-limiter.md, "Status and metrics"; docs/observability.md,
// "SluiceKeyStuck").

const STUCK =
  'limiter: a key has waiters and no grant for longer than a lease; holders (replica, app, age of the request in ms) follow'
const redis = useRedis()
let limiters: RedisLimiter[] = []
afterEach(async () => {
  await closeAll(limiters)
  limiters = []
})

describe(`a stuck key ${needs('redis-server')}`, () => {
  it('is shown with its holders and their age, counted and logged once; a grant ends the spell', async () => {
    const settings = testSettings(redis.url, { leaseMs: 600 })
    const log = memoryLog()
    const a = await createRedisLimiter(settings, { log: memoryLog(), replicaId: 'a' })
    const b = await createRedisLimiter(settings, { log, replicaId: 'b' })
    limiters = [a, b]
    const held = await a.acquire(key, opts(1))
    const waiting = b.acquire(key, opts(1))
    await eventually(async () => (await b.status()).keys[0]?.queued === 1, 5_000, 'the waiter queued')
    let status = await b.status()
    expect([status.keys[0]?.stuckMs, status.details?.stuckKeys]).toEqual([undefined, 0])
    await sleep(700) // a lease and a little: the holder renews its lease, nobody is granted
    status = await b.status()
    const [k] = status.keys
    expect(k?.stuckMs).toBeGreaterThan(600)
    expect(status.details?.stuckKeys).toBe(1)
    expect(k?.holders).toEqual([{ replica: a.replicaId, app: 'default', ageMs: expect.any(Number) as number }])
    expect(k!.holders![0]!.ageMs).toBeGreaterThanOrEqual(600)
    await b.status()
    const told = log.lines.filter((l) => l.msg === STUCK)
    expect(told).toEqual([
      {
        level: 'warn',
        obj: { instance: key.instance, endpoint: key.endpoint, holders: k!.holders },
        msg: STUCK,
      },
    ])
    held.release()
    ;(await waiting).release()
    status = await b.status()
    expect(status.details?.stuckKeys).toBe(0)
  })
})
