import { describe, expect, it } from 'vitest'
import type { PermitKey } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, opts, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()

const search: PermitKey = { instance: 'org1', endpoint: 'POST /accounts/search' }
const accounts: PermitKey = { instance: 'org2', endpoint: 'GET /accounts/{id}' }

describe('redis limiter: status', () => {
  it("every replica reports the global in-flight and queued counts of every active key, and each app's share", async () => {
    const settings = testSettings(redis.url, { leaseMs: 1_500 })
    const a = await redisLimiter(settings)
    const b = await redisLimiter(settings)
    const held = [
      await a.acquire(search, opts(1, { app: 'batch' })),
      await b.acquire(accounts, opts(5)),
      await b.acquire(accounts, opts(5, { app: 'web' })),
    ]
    const waiting = [b.acquire(search, opts(1, { app: 'web' })), a.acquire(search, opts(1, { app: 'batch' }))]
    const expected = [
      {
        instance: 'org1',
        endpoint: 'POST /accounts/search',
        limit: 1,
        inFlight: 1,
        queued: 2,
        oldestWaitMs: expect.any(Number) as number,
        apps: [
          { app: 'batch', held: 1, queued: 1 },
          { app: 'web', held: 0, queued: 1 },
        ],
        // who holds it, and how old the request holding it is
        holders: [{ replica: a.replicaId, app: 'batch', ageMs: expect.any(Number) as number }],
      },
      {
        instance: 'org2',
        endpoint: 'GET /accounts/{id}',
        limit: 5,
        inFlight: 2,
        queued: 0,
        oldestWaitMs: 0,
        apps: [
          { app: 'default', held: 1, queued: 0 },
          { app: 'web', held: 1, queued: 0 },
        ],
        holders: expect.arrayContaining([
          { replica: b.replicaId, app: 'default', ageMs: expect.any(Number) as number },
          { replica: b.replicaId, app: 'web', ageMs: expect.any(Number) as number },
        ]) as unknown,
      },
    ]
    // `a` never touched org2's key: it learns of it through b's heartbeat
    for (const limiter of [a, b]) {
      await eventually(async () => (await limiter.status()).keys.length === 2, 5_000, 'both keys listed')
      const status = await limiter.status()
      expect(status).toMatchObject({
        backend: 'redis',
        mode: 'redis',
        details: { replicas: 2, redis: 'connected', fallback: 'local' },
      })
      expect(status.keys).toEqual(expected)
    }
    for (const p of held) p.release()
    // in whichever order they are served
    await Promise.all(waiting.map(async (w) => (await w).release()))
    await eventually(async () => (await a.status()).keys.length === 0, 5_000, 'no active keys')
    await closeAll([a, b])
  })

  it("an idle semaphore's keys expire by themselves", async () => {
    const settings = testSettings(redis.url, { leaseMs: 500 })
    const a = await redisLimiter(settings)
    ;(await a.acquire(search, opts(1))).release()
    const inspect = redis.client()
    const keys = await inspect.keys(`${settings.keyPrefix}:{*}:*`)
    const semaphoreKeys = keys.filter((k) => !k.includes('{global}'))
    expect(semaphoreKeys.length).toBeGreaterThan(0)
    for (const k of semaphoreKeys) {
      const ttl = await inspect.pttl(k)
      // gone since it was listed (the permit kept for a next request went back: kept-permits.ts) is fine; no TTL is not
      if (ttl === -2) continue
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(3 * 500)
    }
    await eventually(
      async () => (await inspect.keys(`${settings.keyPrefix}:*`)).filter((k) => !k.includes('{global}')).length === 0,
      10_000,
      'keys expired',
    )
    await a.close()
  })
})
