import { afterEach, describe, expect, it } from 'vitest'
import { createRedisLimiter, type RedisLimiter } from '../../../src/limiter/redis/index.js'
import type { SluicePermit } from '../../../src/limiter/redis/ticket.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { fakeShared, GRANTED, permitId, settle } from './fake-scripts.js'
import { closeAll, eventually, key, memoryLog, opts, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

// Redis lost its data (a restart without persistence, a failover to an empty replica) while this
// replica held permits: the next sync counts them again. A permit whose request is already upstream
// stays counted, so the limit holds for it; one whose request was not sent yet must never start it —
// while Redis had nothing, another replica may have been granted the slot that looked empty. It is
// lost (`canStart()` false: the proxy gives it back and the request waits again at its place), and
// its id leaves Redis (docs/redis-limiter.md, "Failure modes"; LIMITER-CHECKLIST "Redis losing its data").

let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

// sync reply: nearest expiry, lost, granted, missing, head, recounted, limit
const recountedReply = (ids: string[], limit: number) => [1_000, [], [], [], null, ids, limit]

describe('a permit counted again after Redis lost its data, deterministically (fake script runner)', () => {
  it('not sent yet: lost — it can no longer start — and its id released at once', async () => {
    const { scripts, shared, request, lost } = (current = fakeShared())
    const w = request(1)
    scripts.take('acquire').answer(GRANTED)
    await settle()
    expect(w.permit!.canStart()).toBe(true) // the proxy asks right after the grant
    // Redis loses its data here; another replica may be granted the slot that now looks free
    const syncing = shared.syncAll()
    scripts.take('sync').answer(recountedReply([permitId(w.permit)], 1))
    await syncing
    expect(w.permit!.canStart()).toBe(false) // the proxy asks again right before the write: held back
    expect(lost).toEqual([w.permit]) // (RedisLimiter's hook marks it lost)
    const release = scripts.take('release') // its id leaves `holders` now
    expect(release.args.slice(7)).toEqual([permitId(w.permit)])
    release.answer([1, [], null])
    await settle()
    w.permit!.release() // the proxy gives the held-back permit back: nothing more to send
    expect(scripts.names()).toEqual([])
  })

  it('already sent: stays counted and may go on; only the unsent one of two is held back', async () => {
    const { scripts, shared, request, lost } = (current = fakeShared())
    const unsent = request(2)
    scripts.take('acquire').answer(GRANTED)
    const sent = request(2)
    scripts.take('acquire').answer(GRANTED)
    await settle()
    sent.permit!.markSent() // its request is being written upstream
    const syncing = shared.syncAll()
    scripts.take('sync').answer(recountedReply([permitId(unsent.permit), permitId(sent.permit)], 2))
    await syncing
    expect([unsent.permit!.canStart(), sent.permit!.canStart()]).toEqual([false, true])
    expect(lost).toEqual([unsent.permit])
    expect(scripts.take('release').args.slice(7)).toEqual([permitId(unsent.permit)])
    expect(sent.permit!.isLost).toBe(false)
    sent.permit!.release()
    expect(scripts.take('release').args.slice(7)).toEqual([permitId(sent.permit)])
  })

  it('sent while the sync was on its way: the sync counted it again, it stays', async () => {
    const { scripts, shared, request, lost } = (current = fakeShared())
    const w = request(1)
    scripts.take('acquire').answer(GRANTED)
    await settle()
    const syncing = shared.syncAll()
    const sync = scripts.take('sync')
    w.permit!.markSent()
    sync.answer(recountedReply([permitId(w.permit)], 1))
    await syncing
    expect(w.permit!.canStart()).toBe(true)
    expect(lost).toEqual([])
    expect(scripts.names()).toEqual([])
  })
})

const redis = useRedis()
let limiters: RedisLimiter[] = []
afterEach(async () => {
  await closeAll(limiters)
  limiters = []
})

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `a permit counted again after Redis lost its data, against a real redis-server ${needs('redis-server')}`,
  () => {
    it('limit 1: A granted, FLUSHALL before its request is sent, B granted the empty slot elsewhere — A can no longer start; B alone holds; A waits behind B', async () => {
      const settings = testSettings(redis.url, { leaseMs: 600 })
      const logA = memoryLog()
      const a = await createRedisLimiter(settings, { log: logA, replicaId: 'a' })
      const b = await createRedisLimiter(settings, { log: memoryLog(), replicaId: 'b' })
      limiters = [a, b]
      const inspect = redis.client()
      const permitA = (await a.acquire(key, opts(1))) as SluicePermit
      expect(permitA.canStart()).toBe(true)
      await inspect.flushall() // this test's own server: as a restart without persistence does
      const permitB = await b.acquire(key, opts(1)) // the slot looks empty: granted at once
      // A's replica finds out at its next sync (a third of a lease)
      const heard = (): boolean =>
        logA.lines.some((l) => l.level === 'warn' && (l.obj as { endpoint?: string }).endpoint === key.endpoint)
      await eventually(heard, 5_000, "A's replica to hear that Redis lost its data")
      expect(permitA.canStart()).toBe(false)
      expect(permitA.isLost).toBe(true)
      expect(permitB.canStart()).toBe(true)
      await eventually(
        async () => (await leftInRedis(inspect, settings.keyPrefix)).holders === 1,
        5_000,
        "A's id to leave Redis",
      )
      // as the proxy does: A's permit given back unused, its request waits again at its place
      permitA.release()
      let granted = false
      const again = a.acquire(key, opts(1, { arrivedAt: Date.now() - 1_000 })).then((p) => ((granted = true), p))
      await eventually(
        async () => (await leftInRedis(inspect, settings.keyPrefix)).queued === 1,
        5_000,
        'A queued again',
      )
      expect(granted).toBe(false)
      permitB.release()
      ;(await again).release()
    })
  },
)
