import { afterEach, describe, expect, it } from 'vitest'
import { fakeShared, settle, turn } from './fake-scripts.js'

// Third review of kept permits (cost): an acquire of this replica that can only queue (every permit of the key is here,
// so it goes out deferred, asking for the head) does not make the key "not quiet" until its reply is read
// (HeadHint.sending leaves quietAt alone). A permit released meanwhile is kept for the next request instead of going
// back: the waiter, already on its way, is served only after its own reply comes back and the kept permit's release
// follows it — a round trip in series where the plain path sends the release at once.
let current: ReturnType<typeof fakeShared> | undefined
afterEach(() => current?.close())

describe('review3: a permit released while our own waiter is on its way to the queue (fake script runner)', () => {
  it('limit 1: another app’s request is deferred behind the permit; the permit released meanwhile goes back at once', async () => {
    const { scripts, request } = (current = fakeShared({ keepPermits: true }))
    const x = request(1, { app: 'x' })
    scripts.take('acquire').answer([1, 1, 0, 1]) // granted, the queue empty: the key is quiet
    await settle()
    const y = request(1, { app: 'y' }) // every permit is here: deferred, then sent asking for the head
    await turn()
    const queued = scripts.take('acquire')
    x.permit!.release() // y's acquire is on its way and can only queue: this permit is y's
    await settle()
    const sentAtOnce = scripts.names()
    queued.answer([0, 1, 0, 1, 1]) // Redis: y queued at the head
    await settle()
    scripts.take('release').answer([1, [String(queued.args[0])], false, 1, 1, false, false])
    await settle()
    expect(y.permit).toBeDefined()
    // on main the permit is kept (no script) and its release waits for y's reply
    expect(sentAtOnce).toEqual(['release'])
  })
})
