import { afterEach, describe, expect, it } from 'vitest'
import type { RedisLimiter } from '../../../src/limiter/redis/index.js'
import { HeardRegistry } from '../../../src/limiter/redis/heard-registry.js'
import { localShare } from '../../../src/limiter/redis/local-share.js'
import type { Permit, PermitKey } from '../../../src/limiter/types.js'
import { needs } from '../../support/tools.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, opts, redisLimiter, sleep, testSettings, heardByAll } from './helpers.js'

// In the `local` fallback the replicas' shares of a key add up to its limit, never more: a limit-1
// key on three replicas is one slot, not three (docs/redis-limiter.md, "Failure modes";
// LIMITER-CHECKLIST "A small limit in fallback").

const keys: PermitKey[] = Array.from({ length: 40 }, (_, i) => ({ instance: `org${i}`, endpoint: 'POST /x' }))

describe('the local share of a limit', () => {
  it('adds up to the limit over the replicas alive when they all claim, for every limit and number of replicas; slots spread over keys', () => {
    for (let n = 1; n <= 5; n++) {
      const live = Array.from({ length: n }, (_, i) => `replica-${i}.${(i * 7919).toString(16)}`)
      for (let limit = 1; limit <= 11; limit++) {
        for (const k of keys) {
          const shares = live.map((self) => localShare(limit, k, self, { live, claims: true }))
          expect(shares.reduce((a, b) => a + b, 0)).toBe(limit)
          // the order the registry lists them in changes nothing
          const reversed = { live: [...live].reverse(), claims: true }
          expect(live.map((self) => localShare(limit, k, self, reversed))).toEqual(shares)
        }
      }
      // at limit 1 the slot is not always the same replica's
      if (n > 1) {
        const owners = new Set(
          keys.map((k) => live.find((self) => localShare(1, k, self, { live, claims: true }) === 1)),
        )
        expect(owners.size).toBeGreaterThan(1)
      }
    }
  })

  it('a replica that never heard the registry (started while Redis was down) takes no slot: the others may hold them all', () => {
    const heard = new HeardRegistry('c', 1_000)
    heard.fellBack()
    expect([1, 5].map((limit) => heard.shareOf(key, limit))).toEqual([0, 0])
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
    await heardByAll(redis.client(), settings.keyPrefix, 3) // each takes its slots only then
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

  it('a replica that joined just before the outage (the others may not have heard it) adds no slot: at most the limit on every key', async () => {
    const settings = testSettings(redis.url, { leaseMs: 3_000 }) // a heartbeat a second: the others hear c late
    limiters = await Promise.all([1, 2].map((i) => redisLimiter(settings, { replicaId: `r${i}` })))
    await eventually(() => limiters.every((l) => l.replicas() === 2), 5_000, 'both seeing two')
    await heardByAll(redis.client(), settings.keyPrefix, 2) // both take their slots
    limiters.push(await redisLimiter(settings, { replicaId: 'late' }))
    await redis.stop() // right after the newcomer's first heartbeat
    await eventually(() => limiters.every((l) => l.mode() === 'local'), 10_000, 'every replica in local')
    const gone = new AbortController()
    const keys = Array.from({ length: 40 }, (_, i) => ({ instance: `org${i}`, endpoint: 'POST /accounts/search' }))
    const granted = new Map<string, Permit[]>()
    for (const k of keys)
      for (const l of limiters)
        l.acquire(k, { ...opts(1), signal: gone.signal }).then(
          (p) => granted.set(k.instance, [...(granted.get(k.instance) ?? []), p]),
          () => {},
        )
    await sleep(300) // every grant the local limiters make is immediate
    const over = [...granted].filter(([, permits]) => permits.length > 1).map(([instance]) => instance)
    gone.abort()
    for (const permits of granted.values()) for (const p of permits) p.release()
    await redis.start()
    expect(over, 'limit-1 keys granted twice').toEqual([])
    expect(granted.size, 'keys served by the replicas that were heard').toBeGreaterThan(0)
  })
})
