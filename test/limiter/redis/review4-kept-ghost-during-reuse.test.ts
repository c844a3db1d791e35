import { afterEach, describe, expect, it } from 'vitest'
import { fakeShared, settle } from './fake-scripts.js'
import { reuseOfOnceQueued } from './kept-harness.js'

// Fourth review of kept permits (LIMITER-CHECKLIST "Redis older than the replica"; "Two paths to one grant"). Since
// HeldPermits.has counts a kept permit whose `reuse` is on its way, a grant message for that id read before the reuse's
// reply is ignored (it is no ghost's when the reuse confirms the id). But `reuse` answers `{0, false}` when the id is
// no holder at all (Redis's state went back to when it was still queued): it leaves the queued id alone (reuse/lua.ts),
// a release then grants it, and that grant's message can be read before the reuse's reply (two connections, unordered).
// The message is ignored, the reply acts on nothing, and the id is a ghost holder nobody gives back: its slot is lost
// until its lease runs out (the sync does not renew it), or a reconciling sync if the rollback is noticed.
let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe('review4: a grant message read during a reuse that Redis answers `{0, false}` (fake script runner)', () => {
  it('the id granted meanwhile is given back (a ghost holder), not left for its lease', async () => {
    const { scripts, shared } = (current = fakeShared({ keepPermits: true }))
    const { id0, r1, r2, reuse } = await reuseOfOnceQueued(current)
    // Redis went back to id0 queued: the reuse runs, finds id0 no holder (`{0, false}`, the queue untouched); then a
    // release grants id0 from the queue, and its message is read before the reuse's reply
    shared.onGrantMessage(id0)
    await settle()
    reuse.answer([0, null])
    await settle()
    // r2 waits again (its acquire); id0, a holder in Redis now that serves nobody, must go back
    const releasesOfId0 = scripts.calls.filter((c) => c.name === 'release' && c.args.map(String).includes(id0))
    expect(releasesOfId0.length).toBe(1)
    expect(r2.error).toBeUndefined()
    r1.permit?.release()
  })
})
