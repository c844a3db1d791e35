import { afterEach, describe, expect, it } from 'vitest'
import { fakeShared, settle, turn } from './fake-scripts.js'

// Fourth review of kept permits (cost; docs/redis-limiter.md, "The request path on Redis": a kept permit goes back "on
// the first sign of a waiter"). A `reuse` answered `{0, L}` released the kept permit because someone is queued (or the
// key is over its limit or the app at its cap): Redis says the key is not quiet. Nothing tells the key's HeadHint, so
// a permit of ours that ends while the request whose reuse failed is on its way to the queue is kept, not given back to
// the waiter `reuse` saw: that waiter waits until our rejoined acquire's reply comes back (a round trip in series).
let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe('review4: a permit that ends after a reuse Redis refused (fake script runner)', () => {
  it('limit 2: the reuse found someone queued; our other permit, released meanwhile, goes back at once', async () => {
    const { scripts, request } = (current = fakeShared({ keepPermits: true }))
    const r0 = request(2)
    scripts.take('acquire').answer([1, 1, 0, 2]) // granted, the queue empty: the key is quiet
    await settle()
    const rA = request(2)
    scripts.take('acquire').answer([1, 1, 0, 2]) // granted, the queue still empty
    await settle()
    r0.permit!.release() // kept: no script
    await settle()
    expect(scripts.names()).toEqual([])
    const r1 = request(2) // takes the kept permit: its reuse goes out
    const reuse = scripts.take('reuse')
    // another replica's waiter is queued (its tell lost, or the setting off there): released, the head granted
    reuse.answer([0, 2])
    await settle()
    await turn()
    const again = scripts.take('acquire') // r1 waits again, by its age
    rA.permit!.release() // the key is known busy: this permit is the queued waiter's
    await settle()
    const sentAtOnce = scripts.names()
    again.answer([0, 0, 0, 2, 2])
    await settle()
    expect(r1.error).toBeUndefined()
    // on kf3 it is kept (no script) until r1's queued reply gives it back
    expect(sentAtOnce).toEqual(['release'])
  })
})
