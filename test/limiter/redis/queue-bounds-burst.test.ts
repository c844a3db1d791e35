import { afterEach, describe, expect, it } from 'vitest'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import type { Permit } from '../../../src/limiter/types.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { fakeShared, GRANTED, idOf, QUEUED, settle, turn } from './fake-scripts.js'
import { eventually, key, opts, redisLimiter, testSettings } from './helpers.js'

// The queue bounds — `queue.maxLength` and an app's `maxQueued`, per replica — hold for a burst that
// arrives within one round trip to Redis (docs/redis-limiter.md, "Fair share between apps",
// maxQueued; LIMITER-CHECKLIST "Bounds under a burst"). They count the waiters whose acquire is still
// on its way, not only those Redis already answered as queued. A waiter they have no room for goes
// out at once with `full` (a slot free at once, or `full`); answered `full`, it is refused when the
// waiters Redis queued (and those parked ahead of it) fill the bound, else it waits at its place
// (parked) until the acquires on their way are answered.

const FULL = 'The queue for POST /accounts/search (instance org1) is full (2 waiting); try again later'
const APP_FULL =
  'The queue for POST /accounts/search (instance org1) for app batch is full (1 waiting); try again later'
const REFUSED = [2, 0, 0]

let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe('queue bounds under a burst, deterministically (fake script runner)', () => {
  it('limit 1, queue.maxLength 2, ten at once: one granted, two queued, seven refused — never more acquires that may queue on their way than could fit', async () => {
    const { scripts, request } = (current = fakeShared())
    const burst = Array.from({ length: 10 }, () => request(1, { maxQueue: 2 }))
    // every acquire goes out at once; two may queue, the eight others carry `full`: a slot free at once, or refused
    const calls = scripts.calls.splice(0)
    expect(calls.map((c) => [c.name, c.args[7]])).toEqual([
      ...Array.from({ length: 2 }, () => ['acquire', '0']),
      ...Array.from({ length: 8 }, () => ['acquire', '1']),
    ])
    // as the script answers them in order: the first takes the free slot, the second queues, no slot is left for the others
    calls[0]!.answer(GRANTED)
    calls[1]!.answer(QUEUED)
    for (const call of calls.slice(2)) call.answer(REFUSED)
    await settle()
    expect(burst[0]!.permit).toBeDefined()
    // the third has room (the first was granted): sent again, queueable (after this turn: the one permit is ours);
    // the fourth waits for its answer (parked); the six others are refused: one queued and one parked fill the bound
    expect(
      burst
        .slice(4)
        .map((w) => [
          w.error?.name,
          (w.error as { code?: string }).code,
          (w.error as { statusCode?: number }).statusCode,
          w.error?.message,
        ]),
    ).toEqual(Array.from({ length: 6 }, () => ['FastifyError', 'SLUICE_QUEUE_FULL', 503, FULL]))
    expect(burst[3]!.error).toBeUndefined()
    await turn()
    const third = scripts.take('acquire')
    expect([idOf(third) === idOf(calls[2]!), third.args[7]]).toEqual([true, '0'])
    expect(scripts.names()).toEqual([])
    third.answer(QUEUED)
    await settle()
    // two queued: the parked one is refused without another round trip
    expect(scripts.names()).toEqual([])
    expect(burst[3]!.error?.message).toBe(FULL)
    expect([burst[1]!.permit, burst[1]!.error, burst[2]!.permit, burst[2]!.error]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ])
  })

  it("an app's maxQueued 1, five at once: one granted, one queued, three refused naming the app", async () => {
    current = fakeShared({ fairness: { apps: { batch: { maxQueued: 1 } } } })
    const { scripts, request } = current
    const burst = Array.from({ length: 5 }, () => request(1, { app: 'batch' }))
    const calls = scripts.calls.splice(0)
    expect(calls.map((c) => c.args[7])).toEqual(['0', '1', '1', '1', '1'])
    calls[0]!.answer(GRANTED)
    for (const call of calls.slice(1)) call.answer(REFUSED)
    await settle()
    await turn()
    const second = scripts.take('acquire') // the app's room, freed by the grant, goes to the oldest answered `full`
    expect([idOf(second) === idOf(calls[1]!), second.args[7]]).toEqual([true, '0'])
    second.answer(QUEUED)
    await settle()
    expect(scripts.names()).toEqual([])
    expect(burst.slice(2).map((w) => w.error?.message)).toEqual([APP_FULL, APP_FULL, APP_FULL])
    expect(burst[0]!.permit).toBeDefined()
    expect(burst[1]!.error).toBeUndefined()
  })

  it('a waiter parked at its place (answered `full` while its room depends on an acquire on its way) leaves nothing behind when it gives up', async () => {
    const { scripts, request } = (current = fakeShared())
    const abort = new AbortController()
    request(2, { maxQueue: 1 })
    const parked = request(2, { maxQueue: 1, signal: abort.signal })
    const [first, second] = [scripts.take('acquire'), scripts.take('acquire')]
    expect(second.args[7]).toBe('1')
    second.answer(REFUSED) // no slot free at once; the first may still be granted rather than queued
    await settle()
    abort.abort()
    await settle()
    expect(parked.error?.name).toBe('AbortError')
    expect(scripts.names()).toEqual([]) // Redis never had its id: nothing to withdraw
    first.answer(QUEUED)
    await settle()
    expect(scripts.names()).toEqual([])
  })
})

const redis = useRedis()

/** Ten acquires at once on one replica; resolves once `settled` of them are answered. */
async function burst(
  limiter: Awaited<ReturnType<typeof redisLimiter>>,
  n: number,
  settled: number,
  o: Parameters<typeof opts>[1],
) {
  const permits: Permit[] = []
  const errors: Error[] = []
  const waits = Array.from({ length: n }, () =>
    limiter.acquire(key, opts(1, o)).then(
      (p) => void permits.push(p),
      (e: Error) => void errors.push(e),
    ),
  )
  await eventually(() => permits.length + errors.length >= settled, 10_000, `${settled} answers`)
  return { permits, errors, waits }
}

describe('queue bounds under a burst, against a real redis-server', () => {
  it('limit 1, queue.maxLength 2, ten at once: one granted, two queued in Redis, seven refused', async () => {
    const settings = testSettings(redis.url, { leaseMs: 5_000 })
    const limiter = await redisLimiter(settings)
    const inspect = redis.client()
    const { permits, errors, waits } = await burst(limiter, 10, 8, { maxQueue: 2 })
    expect(permits).toHaveLength(1)
    expect(errors.map((e) => [(e as { code?: string }).code, e.message])).toEqual(
      Array.from({ length: 7 }, () => ['SLUICE_QUEUE_FULL', FULL]),
    )
    expect(await leftInRedis(inspect, settings.keyPrefix)).toEqual({ holders: 1, queued: 2 })
    // the two queued are served in turn
    permits[0]!.release()
    await eventually(() => permits.length === 2, 10_000, 'the second')
    permits[1]!.release()
    await eventually(() => permits.length === 3, 10_000, 'the third')
    permits[2]!.release()
    await Promise.all(waits)
    await limiter.close()
  })

  it("an app's maxQueued 1, five at once: one granted, one queued, three refused naming the app", async () => {
    const settings = testSettings(redis.url, { leaseMs: 5_000 })
    const limiter = await redisLimiter(settings, {
      fairness: new FairShare(fairnessSettingsSchema.parse({ apps: { batch: { maxQueued: 1 } } })),
    })
    const inspect = redis.client()
    const { permits, errors, waits } = await burst(limiter, 5, 4, { app: 'batch' })
    expect(permits).toHaveLength(1)
    expect(errors.map((e) => [(e as { code?: string }).code, e.message])).toEqual(
      Array.from({ length: 3 }, () => ['SLUICE_QUEUE_FULL', APP_FULL]),
    )
    expect(await leftInRedis(inspect, settings.keyPrefix)).toEqual({ holders: 1, queued: 1 })
    permits[0]!.release()
    await eventually(() => permits.length === 2, 10_000, 'the second')
    permits[1]!.release()
    await Promise.all(waits)
    await limiter.close()
  })
})
