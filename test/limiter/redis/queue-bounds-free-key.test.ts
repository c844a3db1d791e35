import { afterEach, describe, expect, it } from 'vitest'
import { semaphoreKeysOf, tagOf } from '../../../src/limiter/redis/keys.js'
import type { WaiterState } from '../../../src/limiter/redis/waiter.js'
import { useRedis } from '../../support/use-redis.js'
import { fakeShared, GRANTED, idOf, QUEUED, settle, turn } from './fake-scripts.js'
import { eventually, key } from './helpers.js'
import { sharedOnRedis } from './shared-on-redis.js'

// The queue bounds (`queue.maxLength`, an app's `maxQueued`, per replica) cost nothing on a key with
// free slots (docs/redis-limiter.md, "maxQueued"; LIMITER-CHECKLIST "Bounds under a burst", "Fair and
// cheap"). A waiter the bounds have no room for while acquires are on their way is not held back: its
// acquire goes out at once with `full` — granted when a slot is free at once, else answered `full`
// and decided then. So a burst on a free key goes out in one write whatever the caps, no app waits
// behind another's capped waiters, and the waiters parked after a `full` answer count towards the bound.

const REFUSED = [2, 0, 0]
const FULL = 'The queue for POST /accounts/search (instance org1) is full (2 waiting); try again later'

let current: { close(): void } | undefined
afterEach(() => current?.close())

/** how many waiters are parked now, from the lifecycle's moves */
function parkedWatch() {
  let now = 0
  const waiterMoved = (_id: string, from: WaiterState, to: WaiterState): void => {
    if (to === 'parked') now++
    if (from === 'parked') now--
  }
  return { waiterMoved, now: () => now }
}

describe('queue bounds on a free key, deterministically (fake script runner)', () => {
  it("limit 10, an app's maxQueued 2, ten at once: all ten acquires go out together, granted in one round trip", async () => {
    const t = (current = fakeShared({ fairness: { apps: { batch: { maxQueued: 2 } } } }))
    const burst = Array.from({ length: 10 }, () => t.request(10, { app: 'batch' }))
    const calls = t.scripts.calls.splice(0)
    // two may queue; the eight others carry `full`: a slot free at once, else refused rather than queued
    expect(calls.map((c) => c.args[7])).toEqual(['0', '0', ...Array.from({ length: 8 }, () => '1')])
    for (const call of calls) call.answer(GRANTED)
    await settle()
    expect(burst.filter((w) => w.permit !== undefined)).toHaveLength(10)
    expect(t.scripts.names()).toEqual([])
  })

  it("another app's request is sent at once, not behind a capped app's waiters", async () => {
    const t = (current = fakeShared({ fairness: { apps: { batch: { maxQueued: 1 } } } }))
    const batch = Array.from({ length: 5 }, () => t.request(10, { app: 'batch' }))
    const web = t.request(10, { app: 'web' })
    const calls = t.scripts.calls.splice(0)
    expect(calls.map((c) => [idOf(c).endsWith(':web') ? 'web' : 'batch', c.args[7]])).toEqual([
      ['batch', '0'],
      ['batch', '1'],
      ['batch', '1'],
      ['batch', '1'],
      ['batch', '1'],
      ['web', '0'],
    ])
    for (const call of calls) call.answer(GRANTED)
    await settle()
    expect([web.permit !== undefined, batch.filter((w) => w.permit !== undefined).length]).toEqual([true, 5])
  })

  it('a capped app arriving faster than one per round trip on a free key: each request granted in the round trip it went out in, none parked, nor another app held back', async () => {
    const watch = parkedWatch()
    const t = (current = fakeShared({
      fairness: { apps: { batch: { maxQueued: 1 } } },
      waiterMoved: watch.waiterMoved,
    }))
    const waiting: ReturnType<typeof t.request>[] = []
    const late: string[] = []
    for (let step = 0; step < 30; step++) {
      const arrived = Array.from({ length: 3 }, () => t.request(100, { app: 'batch' })) // key limit 100: never contended
      if (step === 10) arrived.push(t.request(100, { app: 'web' }))
      waiting.push(...arrived)
      for (const call of t.scripts.calls.splice(0)) call.answer(GRANTED)
      await settle()
      await turn()
      for (const w of arrived) if (w.permit === undefined || watch.now() > 0) late.push(`step ${step}`)
    }
    expect({ late, granted: waiting.filter((w) => w.permit !== undefined).length }).toEqual({ late: [], granted: 91 })
  })

  it('answered `full`: at most the bound less the waiters queued wait parked; the others are refused at once', async () => {
    const watch = parkedWatch()
    const t = (current = fakeShared({ waiterMoved: watch.waiterMoved }))
    const burst = Array.from({ length: 10 }, () => t.request(1, { maxQueue: 2 }))
    const calls = t.scripts.calls.splice(0)
    calls[0]!.answer(GRANTED)
    calls[1]!.answer(QUEUED)
    for (const call of calls.slice(2)) call.answer(REFUSED)
    await settle()
    // one queued, the third let in by the first's grant (on its way again), so one place may be left:
    // one waits for it, the six others are refused
    const parked = watch.now()
    const refused = burst.filter((w) => w.error?.message === FULL).length
    await turn()
    t.scripts.take('acquire').answer(QUEUED) // the third, queued: no place left
    await settle()
    expect({
      parked,
      refused,
      then: { parked: watch.now(), refused: burst.filter((w) => w.error?.message === FULL).length },
    }).toEqual({ parked: 1, refused: 6, then: { parked: 0, refused: 7 } })
  })

  it('first come first served within an app: a later request never takes the room an earlier one answered `full` may need', async () => {
    const t = (current = fakeShared())
    const a = t.request(1, { maxQueue: 2 })
    const b = t.request(1, { maxQueue: 2 })
    const c = t.request(1, { maxQueue: 2 })
    const [callA, callB, callC] = t.scripts.calls.splice(0)
    expect(callC!.args[7]).toBe('1')
    callA!.answer(GRANTED)
    callB!.answer(QUEUED)
    await settle()
    // C is still on its way and may be answered `full`: the room the grant left is kept for it
    const d = t.request(1, { maxQueue: 2 })
    await turn()
    const callD = t.scripts.take('acquire')
    expect(callD.args[7]).toBe('1')
    callC!.answer(REFUSED)
    callD.answer(REFUSED)
    await settle()
    await turn()
    const again = t.scripts.take('acquire') // C, let in, queueable now
    expect([idOf(again) === idOf(callC!), again.args[7]]).toEqual([true, '0'])
    again.answer(QUEUED)
    await settle()
    expect([a.permit !== undefined, b.error, c.error, d.error?.message]).toEqual([true, undefined, undefined, FULL])
  })
})

const redis = useRedis()

describe('queue bounds on a free key, against a real redis-server', () => {
  it("limit 10, an app's maxQueued 2, ten at once: all ten acquires run in Redis before any reply is read, and all are granted", async () => {
    const client = redis.client()
    const t = sharedOnRedis(client, { fairness: { apps: { batch: { maxQueued: 2 } } } })
    current = t
    t.runner.hold = new Set(['acquire'])
    const burst = Array.from({ length: 10 }, () => t.request(10, { app: 'batch' }))
    await eventually(() => t.runner.held.length === 10, 5_000, 'ten acquires run in Redis, their replies held')
    expect(await client.zcard(semaphoreKeysOf(t.prefix, tagOf(key)).holders)).toBe(10)
    t.runner.passAll()
    await eventually(() => burst.every((w) => w.permit !== undefined), 5_000, 'ten permits')
    for (const w of burst) w.permit!.release()
  })

  it("another app's request runs in Redis in the same round trip as a capped app's burst, and is granted", async () => {
    const client = redis.client()
    const t = sharedOnRedis(client, { fairness: { apps: { batch: { maxQueued: 1 } } } })
    current = t
    t.runner.hold = new Set(['acquire'])
    const batch = Array.from({ length: 5 }, () => t.request(10, { app: 'batch' }))
    const web = t.request(10, { app: 'web' })
    await eventually(() => t.runner.held.length === 6, 5_000, 'six acquires run in Redis, their replies held')
    expect(t.runner.held.filter((h) => String(h.args[0]).endsWith(':web'))).toHaveLength(1)
    t.runner.passAll()
    await eventually(() => web.permit !== undefined && batch.every((w) => w.permit !== undefined), 5_000, 'six permits')
    for (const w of [...batch, web]) w.permit!.release()
  })
})
