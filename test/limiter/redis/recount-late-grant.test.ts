import { afterEach, describe, expect, it } from 'vitest'
import { semaphoreKeysOf, tagOf } from '../../../src/limiter/redis/keys.js'
import type { SluicePermit } from '../../../src/limiter/redis/ticket.js'
import { useRedis } from '../../support/use-redis.js'
import { fakeShared, GRANTED, idOf, permitId, settle, type Call } from './fake-scripts.js'
import { eventually, key } from './helpers.js'
import { sharedOnRedis } from './shared-on-redis.js'

// Redis lost its data; the sync that finds it out counts again the permits the replica held when it
// sent that sync. A permit granted before the loss whose grant the replica reads only after sending
// it — an acquire's reply (replies come in order, but the sync went out before it was read), a grant
// message, a release's reply — is not in that sync's list, and the next sync found the replica known
// again (the first wrote its liveness back): it reported the permit lost though its request was
// upstream. The sync that finds the replica forgotten now says so, and the next one counts again
// too, once (docs/redis-limiter.md, "Failure modes"; LIMITER-CHECKLIST "Redis losing its data").

let current: { close(): void } | undefined
afterEach(() => current?.close())

/** the held ids and the recount flag a sync was sent with */
const syncSent = (call: Call) => {
  const nHeld = Number(call.args[10])
  return { recount: call.args[9], held: call.args.slice(11, 11 + nHeld) }
}
// sync reply: nearest expiry, lost, granted, missing, head, counted again, limit, forgot
const syncReply = (recounted: string[], forgot: 0 | 1) => [1_000, [], [], [], null, recounted, 3, forgot]

describe('a grant read after the sync that found Redis had lost its data was sent (fake script runner)', () => {
  it('is counted again by the next sync; the one after is an ordinary sync again', async () => {
    const t = (current = fakeShared())
    const a = t.request(3)
    t.scripts.take('acquire').answer(GRANTED)
    await settle()
    a.permit!.markSent()
    const x = t.request(3)
    const xAcquire = t.scripts.take('acquire') // run in Redis before the loss: granted; its reply not read yet
    const first = t.shared.syncAll()
    const sync1 = t.scripts.take('sync')
    expect(syncSent(sync1)).toEqual({ recount: '0', held: [permitId(a.permit)] })
    xAcquire.answer(GRANTED) // read before the sync's reply (in order), after the sync went out
    await settle()
    x.permit!.markSent()
    sync1.answer(syncReply([permitId(a.permit)], 1)) // Redis had lost this replica: A counted again
    await first
    const second = t.shared.syncAll()
    const sync2 = t.scripts.take('sync')
    expect(syncSent(sync2)).toEqual({ recount: '1', held: [permitId(a.permit), idOf(xAcquire)] })
    sync2.answer(syncReply([idOf(xAcquire)], 0))
    await second
    expect([a.permit!.isLost, x.permit!.isLost, t.lost]).toEqual([false, false, []])
    const third = t.shared.syncAll()
    expect(syncSent(t.scripts.take('sync')).recount).toBe('0')
    void third
  })
})

const redis = useRedis()

describe('a grant read after the sync that found Redis had lost its data was sent, on a real redis-server', () => {
  it('limit 2: both permits whose requests are upstream stay counted; a third request waits', async () => {
    const client = redis.client()
    const t = sharedOnRedis(client, { leaseMs: 60_000 })
    current = t
    const keys = semaphoreKeysOf(t.prefix, tagOf(key))
    const a = t.request(2)
    await eventually(() => a.permit !== undefined, 5_000, "A's permit")
    a.permit!.markSent()
    t.runner.hold = new Set(['acquire', 'sync'])
    const x = t.request(2) // granted in Redis; its reply held
    await eventually(() => t.runner.held.length === 1, 5_000, "X's acquire run")
    await client.flushall() // Redis loses its data
    const first = t.shared.syncAll() // sent before X's reply is read: it holds A only
    await eventually(() => t.runner.held.length === 2, 5_000, 'the sync run')
    t.runner.hold = new Set()
    t.runner.passAll() // X's reply, then the sync's: in the order Redis sent them
    await first
    const permitX = x.permit as SluicePermit
    permitX.markSent()
    await t.shared.syncAll()
    expect({ lost: t.lost.length, xLost: permitX.isLost, holders: await client.zcard(keys.holders) }).toEqual({
      lost: 0,
      xLost: false,
      holders: 2,
    })
    const c = t.request(2)
    await eventually(async () => (await client.zcard(keys.queue)) === 1, 5_000, 'a third request queued')
    expect(c.permit).toBeUndefined()
    a.permit!.release()
    await eventually(() => c.permit !== undefined, 5_000, "C's permit once A's request is done")
    permitX.release()
    c.permit!.release()
  })
})
