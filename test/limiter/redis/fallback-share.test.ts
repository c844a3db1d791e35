import { afterEach, describe, expect, it } from 'vitest'
import type { RedisLimiter } from '../../../src/limiter/redis/index.js'
import { localShare } from '../../../src/limiter/redis/local-share.js'
import type { Permit, PermitKey } from '../../../src/limiter/types.js'
import { needs } from '../../support/tools.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, opts, redisLimiter, sleep, testSettings } from './helpers.js'

// In the `local` fallback the replicas' shares of a key add up to its limit, never more: a limit-1
// key on three replicas is one slot, not three (docs/redis-limiter.md, "Failure modes";
// LIMITER-CHECKLIST "A small limit in fallback").

const keys: PermitKey[] = Array.from({ length: 40 }, (_, i) => ({ instance: `org${i}`, endpoint: 'POST /x' }))

describe('the local share of a limit', () => {
  it('adds up to the limit over the replicas alive, for every limit and number of replicas; a remainder spreads over keys', () => {
    for (let n = 1; n <= 5; n++) {
      const alive = Array.from({ length: n }, (_, i) => `replica-${i}.${(i * 7919).toString(16)}`)
      for (let limit = 1; limit <= 11; limit++) {
        for (const k of keys) {
          const shares = alive.map((self) => localShare(limit, k, self, alive))
          expect(shares.reduce((a, b) => a + b, 0)).toBe(limit)
          expect(Math.max(...shares) - Math.min(...shares)).toBeLessThanOrEqual(1)
          // the order the registry lists them in changes nothing
          expect(alive.map((self) => localShare(limit, k, self, [...alive].reverse()))).toEqual(shares)
        }
      }
      // at limit 1 the slot is not always the same replica's
      if (n > 1) {
        const owners = new Set(keys.map((k) => alive.find((self) => localShare(1, k, self, alive) === 1)))
        expect(owners.size).toBeGreaterThan(1)
      }
    }
  })

  it('a replica not in the list (never heard by the registry) counts itself in', () => {
    const shares = ['a', 'b', 'c'].map((self) => localShare(2, key, self, ['a', 'b']))
    expect(shares.reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(2 + 1)
    expect(localShare(3, key, 'c', ['a', 'b'])).toBe(1)
  })
})

const redis = useRedis()
let limiters: RedisLimiter[] = []
afterEach(async () => {
  await closeAll(limiters)
  limiters = []
})

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(`three replicas in local fallback ${needs('redis-server')}`, () => {
  it('grant no more than the limit in all, at limit 1 and at limit 5', async () => {
    const settings = testSettings(redis.url, { leaseMs: 600 })
    limiters = await Promise.all([1, 2, 3].map((i) => redisLimiter(settings, { replicaId: `r${i}` })))
    await eventually(() => limiters.every((l) => l.replicas() === 3), 5_000, 'every replica seeing three')
    await redis.stop()
    await eventually(() => limiters.every((l) => l.mode() === 'local'), 10_000, 'every replica in local')
    const gone = new AbortController()
    const granted = (limit: number, k: PermitKey): Promise<Permit>[] =>
      limiters.flatMap((l) =>
        Array.from({ length: limit }, () => l.acquire(k, { ...opts(limit), signal: gone.signal })),
      )
    const waits = [
      ...granted(1, { instance: 'small', endpoint: 'POST /accounts/search' }),
      ...granted(5, { instance: 'five', endpoint: 'GET /donations/{id}' }),
    ]
    const done: { instance: string; permit: Permit }[] = []
    const instances: string[] = [...new Array<string>(3).fill('small'), ...new Array<string>(15).fill('five')]
    waits.forEach((w, i) => {
      w.then(
        (permit) => done.push({ instance: instances[i]!, permit }),
        () => {},
      )
    })
    await eventually(() => done.length >= 6, 5_000, 'the local grants')
    await sleep(200) // and nothing more comes (every grant the local limiters would make is immediate)
    const byKey = (instance: string): number => done.filter((p) => p.instance === instance).length
    expect({ small: byKey('small'), five: byKey('five') }).toEqual({ small: 1, five: 5 })
    gone.abort()
    for (const { permit } of done) permit.release()
    await redis.start()
  })
})
