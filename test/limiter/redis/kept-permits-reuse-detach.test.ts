import { afterEach, describe, expect, it } from 'vitest'
import { fakeShared, permitId, settle } from './fake-scripts.js'

// LIMITER-CHECKLIST "Redis coming back after a fallback" / "A small limit in fallback": a request whose reuse script is
// on its way when the replica detaches (RedisLimiter pins heldPermits() and routes detachWaiters()'s tickets to the
// fallback) is neither pinned nor handed to the fallback; the reuse reply that arrives later still starts it on the
// Redis permit, beside whatever the fallback grants in its place.
let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe('kept permits: a reuse in flight when the replica falls back (fake script runner)', () => {
  it('the late reuse reply does not start a request the fallback does not count', async () => {
    const { scripts, shared, request } = (current = fakeShared({ keepPermits: true }))
    const first = request(1)
    scripts.take('acquire').answer([1, 1, 0, 1]) // granted, queue empty: may be kept
    await settle()
    const id = permitId(first.permit)
    first.permit!.release() // kept
    await settle()
    const next = request(1)
    const reuse = scripts.take('reuse')
    // Redis is judged unreachable (another command timed out): what RedisLimiter does on detach
    const pinned = shared.heldPermits()
    const toFallback = shared.detachWaiters()
    reuse.answer([1, 1]) // the reply was only late: Redis renewed the kept id
    await settle()
    const started = next.permit?.canStart() === true
    next.permit?.release()
    // the fallback got the request, like a queued acquire's, and the late reply starts nothing: the id goes back
    expect(pinned).toEqual([]) // not a held permit: its request is the fallback's
    expect(toFallback).toHaveLength(1)
    expect(started).toBe(false)
    expect(shared.heldPermits().map(permitId)).not.toContain(id)
  })
})
