import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import type { SluicePermit } from '../../../src/limiter/redis/ticket.js'
import type { Permit } from '../../../src/limiter/types.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, opts, redisLimiter, sleep, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

const redis = useRedis()

/** Whether `promise` settles within `ms` (it is left running either way). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)))
  const settled = promise.then(
    () => true,
    () => true,
  )
  try {
    return await Promise.race([settled, late])
  } finally {
    clearTimeout(timer)
  }
}

/** Two limiter instances (replicas) on the test's Redis, and what their semaphores leave there. */
async function twoReplicas(leaseMs: number) {
  const settings = testSettings(redis.url, { leaseMs })
  const a = await redisLimiter(settings)
  const b = await redisLimiter(settings)
  const inspect = redis.client()
  const inRedis = () => leftInRedis(inspect, settings.keyPrefix)
  /** Starts each acquire only once Redis has queued the one before: the queue's order is this one. */
  const queueInOrder = async <T extends (() => Promise<Permit>)[]>(
    ...acquires: T
  ): Promise<{ [K in keyof T]: Promise<Permit> }> => {
    const before = (await inRedis()).queued
    const waits: Promise<Permit>[] = []
    for (const acquire of acquires) {
      waits.push(acquire())
      await eventually(
        async () => (await inRedis()).queued === before + waits.length,
        5_000,
        `waiter ${waits.length} queued`,
      )
    }
    return waits as { [K in keyof T]: Promise<Permit> }
  }
  const emptied = () =>
    eventually(
      async () => {
        const left = await inRedis()
        return left.holders === 0 && left.queued === 0
      },
      5_000,
      'Redis to be empty',
    )
  /** `a` holds the only permit, and `next`, its own waiter, is queued behind it: the acquire's reply named it the head */
  const holderAndNext = async () => {
    const first = await a.acquire(key, opts(1))
    const [next] = await queueInOrder(() => a.acquire(key, opts(1)))
    await sleep(20) // that reply has been read
    return { first, next }
  }
  const close = () => closeAll([a, b])
  return { settings, a, b, inspect, inRedis, queueInOrder, holderAndNext, emptied, close }
}

/** Counts the scripts (EVALSHA, EVAL) any ioredis client in this process sends, until `stop()`. */
function recordScripts(): { readonly names: string[]; stop(): void } {
  const proto = Redis.prototype as unknown as {
    sendCommand: (command: { name: string }, ...rest: unknown[]) => unknown
  }
  const original = proto.sendCommand
  const names: string[] = []
  proto.sendCommand = function (this: Redis, command, ...rest) {
    if (command.name.startsWith('eval')) names.push(command.name)
    return original.call(this, command, ...rest)
  }
  return { names, stop: () => void (proto.sendCommand = original) }
}

/** Blocks the event loop, as a long garbage collection or a busy handler would. */
function stall(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy
  }
}

// A release hands its permit to this replica's own waiter when Redis last named that waiter as the
// queue's head: no round trip before the next request starts. A frozen Redis (SIGSTOP) shows that no
// round trip was needed; it cannot be frozen on a shared server.
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `redis limiter: handing a permit to our own next waiter ${needs('redis-server')}`,
  () => {
    afterEach(() => redis.thaw())

    it("goes to this replica's waiter at the head of the queue without waiting for Redis, and Redis ends up counting it once", async () => {
      const { a, b, inRedis, queueInOrder, emptied, close } = await twoReplicas(3_000)
      const first = await a.acquire(key, opts(1))
      const [w1, w2, x] = await queueInOrder(
        () => a.acquire(key, opts(1)),
        () => a.acquire(key, opts(1)),
        () => b.acquire(key, opts(1)),
      )

      // w1 takes the permit here (its acquire's reply said it was the head); withdrawing it from the
      // queue, Redis names w2 as the new head
      first.release()
      const p1 = await w1
      await eventually(async () => (await inRedis()).queued === 2, 5_000, 'w1 to leave the queue')
      await sleep(20) // that reply has been read

      redis.freeze()
      p1.release()
      expect(await settlesWithin(w2, 1_000)).toBe(true)
      const p2 = await w2
      expect(await settlesWithin(x, 200)).toBe(false) // b's waiter still waits its turn
      redis.thaw()

      // w2 left the queue and holds the permit w1 held: one holder, b's waiter still queued
      await eventually(async () => (await inRedis()).queued === 1, 5_000, 'w2 to leave the queue')
      expect(await inRedis()).toEqual({ holders: 1, queued: 1 })

      p2.release() // the head is b's now: an ordinary release, granted over pub/sub
      ;(await x).release()
      await emptied()
      await close()
    })

    it('goes to a waiter that queued behind its own holder with nobody ahead (the acquire reply says it is the head)', async () => {
      const { holderAndNext, emptied, close } = await twoReplicas(3_000)
      const { first, next } = await holderAndNext()

      redis.freeze()
      first.release()
      expect(await settlesWithin(next, 1_000)).toBe(true)
      redis.thaw()
      ;(await next).release()
      await emptied()
      await close()
    })

    it('a request that can only queue, asked for in the same turn, goes to Redis after the handed-over request has started', async () => {
      const { a, holderAndNext, emptied, close } = await twoReplicas(3_000)
      const { first, next: w } = await holderAndNext()

      const sent = recordScripts()
      let sentBeforeW: string[] | undefined
      const started = w.then((p) => ((sentBeforeW = [...sent.names]), p))
      first.release() // handed to w here
      const later = a.acquire(key, opts(1)) // as a new request arriving in the same turn: a holds the only permit
      const pw = await started
      sent.stop()
      // neither the handover nor the later acquire's script (sent after this turn) came before w's start
      expect(sentBeforeW).toEqual([])
      expect(await settlesWithin(later, 200)).toBe(false) // it queued behind w
      pw.release()
      ;(await later).release()
      await emptied()
      await close()
    })

    it('a request that can only queue and is aborted before its acquire went out leaves nothing in Redis and sends nothing', async () => {
      const { a, inRedis, emptied, close } = await twoReplicas(3_000)
      const first = await a.acquire(key, opts(1))
      const sent = recordScripts()
      const abort = new AbortController()
      const aborted = a.acquire(key, opts(1, { signal: abort.signal }))
      abort.abort() // in the same turn, before its script is sent
      await expect(aborted).rejects.toThrow()
      await sleep(50)
      sent.stop()
      expect(sent.names).toEqual([])
      expect(await inRedis()).toEqual({ holders: 1, queued: 0 })
      first.release()
      await emptied()
      await close()
    })

    it("does not pass over another replica's request re-queued with its age at the head: Redis tells the holder the head it knew is stale", async () => {
      const { b, inRedis, holderAndNext, emptied, close } = await twoReplicas(3_000)
      const { first, next: w } = await holderAndNext()
      const order: string[] = []
      void w.then(() => order.push('w'))
      // as after an upstream 429: it arrived 5 s ago, before w
      const retried = b.acquire(key, opts(1, { arrivedAt: Date.now() - 5_000 })).then((p) => (order.push('retried'), p))
      await eventually(async () => (await inRedis()).queued === 2, 5_000, 'the re-queued request queued')
      await sleep(20) // the message that the head is stale has been read

      redis.freeze()
      first.release()
      expect(await settlesWithin(w, 300)).toBe(false) // not handed over
      redis.thaw()
      ;(await retried).release()
      ;(await w).release()
      expect(order).toEqual(['retried', 'w'])
      await emptied()
      await close()
    })

    it('hands nothing over when its lease may run out before the next renewal (an event-loop stall)', async () => {
      // renewals every 300 ms; after a 650 ms stall, less than one renewal period of the lease is sure
      const { a, inRedis, queueInOrder, emptied, close } = await twoReplicas(900)
      const first = await a.acquire(key, opts(1))
      const [w1, w2] = await queueInOrder(
        () => a.acquire(key, opts(1)),
        () => a.acquire(key, opts(1)),
      )
      first.release() // handed to w1, whose withdrawal from the queue makes Redis name w2 the head
      const p1 = await w1
      await eventually(async () => (await inRedis()).queued === 1, 5_000, 'w1 to leave the queue')
      await sleep(20) // that reply has been read

      stall(650)
      redis.freeze()
      p1.release()
      // not handed over: the release waits for Redis like any other
      expect(await settlesWithin(w2, 300)).toBe(false)
      redis.thaw()
      ;(await w2).release()
      await emptied()
      await close()
    })
  },
)

describe('redis limiter: handover at a limit above 1', () => {
  it.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
    `none while another replica holds a permit of the key (its release may have granted our waiter already) ${needs('redis-server')}`,
    async () => {
      // renewals (sync) every 500 ms: their replies name the head too
      const { a, b, queueInOrder, emptied, close } = await twoReplicas(1_500)
      try {
        const pa = await a.acquire(key, opts(2))
        const pb = await b.acquire(key, opts(2))
        const [w1, w2] = await queueInOrder(
          () => a.acquire(key, opts(2)),
          () => a.acquire(key, opts(2)),
        )
        pa.release() // its script grants w1
        const p1 = await w1
        await sleep(700) // a sync has named w2 as the head since

        redis.freeze()
        p1.release()
        expect(await settlesWithin(w2, 300)).toBe(false)
        redis.thaw()
        ;(await w2).release()
        pb.release()
        await emptied()
      } finally {
        redis.thaw()
        await close()
      }
    },
  )

  it('a waiter granted in Redis meanwhile (one of our leases was lost) is handed the permit once, and its second slot goes to the next in line', async () => {
    const { settings, a, b, inspect, inRedis, queueInOrder, close } = await twoReplicas(3_000)
    const limit = 2
    const lost = (await a.acquire(key, opts(limit))) as SluicePermit
    const other = await a.acquire(key, opts(limit))
    const [w1, w2, x] = await queueInOrder(
      () => a.acquire(key, opts(limit)),
      () => a.acquire(key, opts(limit)),
      () => b.acquire(key, opts(limit)),
    )
    other.release() // its script grants w1 and names w2 as the head; a holds both permits again
    const p1 = await w1

    // What a sync elsewhere does when one of a's leases has run out: the expired holder is dropped
    // and its slot granted to the head, w2 — whose grant message a has not seen yet.
    const [holdersKey] = await inspect.keys(`${settings.keyPrefix}:*:holders`)
    const [queueKey] = await inspect.keys(`${settings.keyPrefix}:*:queue`)
    const [w2Id] = await inspect.zrange(queueKey!, 0, 0)
    const redisGrant = lost.grant
    if (redisGrant.kind !== 'redis') throw new Error('expected a Redis permit')
    await inspect
      .multi()
      .zrem(holdersKey!, redisGrant.id)
      .zrem(queueKey!, w2Id!)
      .zadd(holdersKey!, Date.now() + 60_000, w2Id!)
      .exec()

    p1.release() // handed to w2 here; the background withdrawal finds w2 a holder and releases that slot
    const p2 = await w2
    // the next in line got the second slot (not a lease expiry much later: that grant lasts a minute)
    expect(await settlesWithin(x, 2_000)).toBe(true)
    const px = await x
    const left = await inRedis()
    expect(left).toEqual({ holders: limit, queued: 0 })
    for (const permit of [p2, px, lost]) permit.release()
    await eventually(async () => (await inRedis()).holders === 0, 5_000, 'every permit back')
    await close()
  })
})
