import { afterEach, describe, expect, it } from 'vitest'
import { fakeShared, settle } from './fake-scripts.js'
import { reuseOfOnceQueued } from './kept-harness.js'

// Third review of kept permits (LIMITER-CHECKLIST "Two paths to one grant", "Redis older than the replica"). A grant
// message for an id that is no waiter here is given back at once (Waiting.onGrantMessage: a ghost's grant), unless the
// id is "a permit held now" (Semaphores.retired asks HeldPermits.has). `has` counts held and kept permits, not a kept
// permit whose reuse script is on its way (HeldPermits.#reusing): a grant message read in that window releases the id
// the reuse then confirms, and the request starts on a permit Redis no longer counts.
//
// How such a message comes: Redis's state goes back (a failover to a replica that lagged, without a reconnect here) to
// when the kept permit's id was still queued, and a release grants it again just before the reuse runs; the message,
// published before the reuse ran, is read before the reuse's reply.
let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe('review3: a grant message for a kept permit whose reuse is on its way (fake script runner)', () => {
  it('is not taken for a ghost’s: the id is not released under the request the reuse starts', async () => {
    const { scripts, shared } = (current = fakeShared({ keepPermits: true }))
    const { id0, r1, r2, reuse } = await reuseOfOnceQueued(current)
    shared.onGrantMessage(id0) // Redis went back to id0 queued and granted it again; read before the reuse's reply
    await settle()
    const sent = scripts.names()
    reuse.answer([1, 2]) // the reuse ran after that grant: id0 is a holder, renewed
    await settle()
    expect(r2.permit?.canStart()).toBe(true) // the request starts on id0
    // so id0 must stay counted: on main a release of id0 went out, written after the reuse (Redis forgets it)
    expect(sent).toEqual([])
    r2.permit?.release()
    r1.permit?.release()
  })
})
