/** Cold review of rates2 (273537b): cases that go over the rate. */
import { describe, expect, it, onTestFinished } from 'vitest'
import { gcraParams } from '../../../src/limiter/rate/gcra.js'
import { RedisRateGate } from '../../../src/limiter/redis/index.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, key, memoryLog, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()

describe('review rates2: rate epoch', () => {
  it('Redis data loss: the replica whose epoch id was the one written is not handed a fresh burst', async () => {
    if (!redis.managed) return
    const settings = testSettings(redis.url, { leaseMs: 600 })
    const limiters = [
      await redisLimiter(settings, { replicaId: 'a' }),
      await redisLimiter(settings, { replicaId: 'b' }),
    ]
    onTestFinished(() => closeAll(limiters))
    const gate = (i: number) =>
      new RedisRateGate(
        {
          scripts: limiters[i]!.scripts,
          keyPrefix: settings.keyPrefix,
          mode: () => 'redis',
          replicas: () => 2,
          settleMs: 2_000,
        },
        memoryLog(),
      )
    const epochKey = `${settings.keyPrefix}:{global}:rate-epoch`
    // replica A starts first: the epoch is its fresh id
    const a = gate(0)
    for (let i = 0; i < 100 && (await redis.client().exists(epochKey)) === 0; i++)
      await new Promise((r) => setTimeout(r, 10))
    const b = gate(1)
    await new Promise((r) => setTimeout(r, 50))
    const params = gcraParams({ requests: 4, windowMs: 1000, burst: 4 })
    // all four of the window's starts taken by replica B
    for (let i = 0; i < 4; i++) expect((await b.reserve(key, params, 0)).granted).toBe(true)
    await redis.client().flushall()
    // A never started on the key and reaches Redis first: it writes its same fresh id again, reads it back
    // equal to the one it remembers, and takes the key as new
    const granted = []
    for (let i = 0; i < 4; i++) granted.push((await a.reserve(key, params, 0)).granted)
    expect(granted).toEqual([false, false, false, false])
  })

  it('Redis data loss: a replica that never used two keys is not handed a burst on the second one it reaches', async () => {
    if (!redis.managed) return
    const settings = testSettings(redis.url, { leaseMs: 600 })
    const limiters = [
      await redisLimiter(settings, { replicaId: 'a' }),
      await redisLimiter(settings, { replicaId: 'b' }),
    ]
    onTestFinished(() => closeAll(limiters))
    const gate = (i: number) =>
      new RedisRateGate(
        {
          scripts: limiters[i]!.scripts,
          keyPrefix: settings.keyPrefix,
          mode: () => 'redis',
          replicas: () => 2,
          settleMs: 2_000,
        },
        memoryLog(),
      )
    const epochKey = `${settings.keyPrefix}:{global}:rate-epoch`
    const a = gate(0)
    for (let i = 0; i < 100 && (await redis.client().exists(epochKey)) === 0; i++)
      await new Promise((r) => setTimeout(r, 10))
    const b = gate(1)
    await new Promise((r) => setTimeout(r, 50))
    const params = gcraParams({ requests: 4, windowMs: 1000, burst: 4 })
    const k1 = { instance: 'org1', endpoint: 'GET /one' }
    const k2 = { instance: 'org1', endpoint: 'GET /two' }
    // A takes every start of both keys' windows
    for (let i = 0; i < 4; i++) expect((await a.reserve(k1, params, 0)).granted).toBe(true)
    for (let i = 0; i < 4; i++) expect((await a.reserve(k2, params, 0)).granted).toBe(true)
    await redis.client().flushall()
    // B (never started on either) reaches k1 first: it sees the epoch changed and holds k1 a window
    expect((await b.reserve(k1, params, 0)).granted).toBe(false)
    // then k2, still within the window after the loss: its epoch now matches the one it just read
    const granted = []
    for (let i = 0; i < 4; i++) granted.push((await b.reserve(k2, params, 0)).granted)
    expect(granted).toEqual([false, false, false, false])
  })
})
