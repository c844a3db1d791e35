import { afterEach, describe, expect, it } from 'vitest'
import type { Permit } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { needs } from '../../support/tools.js'
import { fakeShared, settle, turn } from './fake-scripts.js'
import { eventually, key, opts, redisLimiter, testSettings } from './helpers.js'

// Third review of kept permits (LIMITER-CHECKLIST "Fair and cheap": FIFO within an app; "Bounds under a burst").
// A request that takes the kept permit is not a waiter while its reuse script is on its way (waiting.ts #reuse); the
// same app's requests arriving meanwhile join the queue bounds and queue. When `reuse` finds someone queued and
// releases the kept permit, the first request is enqueued as a brand-new waiter: behind every one that arrived after it,
// and through the queue bounds last (refused 503 when they are full, while the later ones wait).
const redis = useRedis()
let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe('review3: a reuse that finds the key busy (fake script runner)', () => {
  it('the request that took the kept permit waits again at its place: placed by its age, never sent `full`', async () => {
    const { scripts, request } = (current = fakeShared({ keepPermits: true }))
    const first = request(1)
    scripts.take('acquire').answer([1, 1, 0, 1]) // granted, the queue empty: may be kept
    await settle()
    first.permit!.release() // kept
    await settle()
    const a1 = request(1, { maxQueue: 2 }) // takes the kept permit: its reuse goes out
    const reuse = scripts.take('reuse')
    const a2 = request(1, { maxQueue: 2 }) // arrive during the reuse: every permit is here, so deferred
    const a3 = request(1, { maxQueue: 2 })
    await turn()
    scripts.take('acquire').answer([0, 1, 0, 1, 1]) // a2 queued at the head
    scripts.take('acquire').answer([0, 0, 0, 1, 1]) // a3 queued behind it
    await settle()
    reuse.answer([0, 1]) // Redis saw another replica's waiter queued: the kept permit released, a1 acquires anew
    await settle()
    await turn()
    const again = scripts.take('acquire')
    const ageMs = Number(again.args[6])
    const full = String(again.args[7])
    expect([a1.error, a2.error, a3.error]).toEqual([undefined, undefined, undefined])
    // a1 arrived before a2 and a3: placed as a new waiter (age 0) it is served after both; sent `full` it may be refused
    expect({ ageMs: ageMs > 0, full }).toEqual({ ageMs: true, full: '0' })
  })
})

// counts on a redis-server of the test's own (a replica with the setting off beside one with it on: a rolling enable)
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `review3: a reuse that finds the key busy, on a real Redis ${needs('redis-server')}`,
  () => {
    /**
     * A keeps a permit; B (redis.keepPermits off, as during a rolling enable: its acquire tells no holder) queues; then
     * three requests of one app arrive at A in one turn. The first takes the kept permit; `reuse` sees B's waiter and
     * gives the permit to it.
     */
    async function burstBehindKept(maxQueue: number) {
      const settings = testSettings(redis.url, { keepPermits: true, leaseMs: 60_000 })
      const a = await redisLimiter(settings, { keepForMs: 60_000 })
      const b = await redisLimiter({ ...settings, keepPermits: false })
      const inspect = redis.client()
      const holders = async () => {
        const k = await inspect.keys(`${settings.keyPrefix}:*:holders`)
        return k.length === 0 ? 0 : await inspect.zcard(k[0]!)
      }
      const queued = async () => {
        const k = await inspect.keys(`${settings.keyPrefix}:*:queue`)
        return k.length === 0 ? 0 : await inspect.zcard(k[0]!)
      }
      ;(await b.acquire(key, opts(1))).release() // announces B
      await eventually(async () => (await holders()) === 0, 5_000, 'B released')
      ;(await a.acquire(key, opts(1))).release() // A keeps this one
      const order: string[] = []
      const errors: string[] = []
      const hold = (who: string) => (p: Permit) => {
        order.push(who)
        setTimeout(() => p.release(), 30)
      }
      const refused = (who: string) => (err: Error) => void errors.push(`${who}: ${err.name}`)
      const bw = b.acquire(key, opts(1)).then(hold('b'), refused('b'))
      await eventually(async () => (await queued()) === 1, 5_000, 'B queued behind the kept permit')
      const burst = ['a1', 'a2', 'a3'].map((who) => a.acquire(key, opts(1, { maxQueue })).then(hold(who), refused(who)))
      await Promise.all([bw, ...burst])
      await new Promise((r) => setTimeout(r, 50))
      inspect.disconnect()
      await Promise.all([a.close(), b.close()])
      return { order, errors }
    }

    it('FIFO within an app: the request that took the kept permit is served before the two that arrived after it', async () => {
      const { order, errors } = await burstBehindKept(1_000)
      expect(errors).toEqual([])
      expect(order).toEqual(['b', 'a1', 'a2', 'a3'])
    })

    it('queue bound 2: the first of three requests is not the one refused 503 (it arrived before the two that wait)', async () => {
      const { order, errors } = await burstBehindKept(2)
      // a1 took the kept permit before a2 and a3 arrived: if the bound refuses anyone it is a3, never a1
      expect(errors.filter((e) => e.startsWith('a1'))).toEqual([])
      expect(order[1]).toBe('a1')
    })
  },
)
