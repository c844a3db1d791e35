import { afterEach, describe, expect, it } from 'vitest'
import { RedisTimeoutError } from '../../../src/limiter/redis/errors.js'
import { fakeShared, GRANTED, idOf, QUEUED, settle, turn } from './fake-scripts.js'

// A release that grants one of the releasing replica's own waiters sends it no message: the reply is
// the only word of that grant (docs/redis-limiter.md, "Scripts"). Lost (a timeout: the script may
// have run), the replica takes Redis for unreachable (the limiter's failed hook detaches every
// waiter), and the waiter's id is given back by the next sync — whether the lost reply granted it or
// not — so its slot is never held by nobody.

let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe('shared permits: the lost reply of a release that granted our own waiter', () => {
  it('gives the waiter id back with the released one on the next sync', async () => {
    const { scripts, shared, request, failed } = (current = fakeShared())
    const first = request(1)
    scripts.take('acquire').answer(GRANTED)
    await settle()
    const w = request(1)
    await turn() // (the one permit is ours: the acquire goes out after this turn)
    const acquire = scripts.take('acquire')
    acquire.answer(QUEUED)
    await settle()

    first.permit!.release()
    const release = scripts.take('release')
    release.fail(new RedisTimeoutError('release', 2_000)) // ran in Redis, granting w: nobody heard
    await settle()
    expect(failed).toHaveLength(1)
    expect(w.permit).toBeUndefined()
    shared.detachWaiters() // what the limiter does on failed (RedisLimiter, "Redis unreachable")

    void shared.syncAll().catch(() => undefined)
    const sync = scripts.take('sync')
    // the last two ids of the drop list, before the epochs, the reconcile flag, an empty list of ids kept, the next sequence and nSure
    const drops = sync.args.slice(sync.args.length - 8, sync.args.length - 6).map(String)
    expect(new Set(drops)).toEqual(new Set([String(release.args[7]), idOf(acquire)]))
  })
})
