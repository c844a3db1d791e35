import { describe, expect, it } from 'vitest'
import { createMemoryLimiter } from '../../../src/limiter/memory/index.js'
import { Deadlines, MAX_TIMER_MS } from '../../../src/limiter/deadlines.js'

const key = { instance: 'org1', endpoint: 'POST /accounts/search' }
const turn = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

describe('a wait deadline beyond what setTimeout takes (2^31-1 ms, about 24.8 days)', () => {
  it('does not end the wait at once (queue.maxWaitMs of a month)', async () => {
    const limiter = createMemoryLimiter()
    const held = await limiter.acquire(key, {
      limit: 1,
      maxQueue: 10,
      deadline: Date.now() + MAX_TIMER_MS + 86_400_000,
    })
    let outcome = 'waiting'
    const waiting = limiter.acquire(key, { limit: 1, maxQueue: 10, deadline: Date.now() + 31 * 86_400_000 }).then(
      (p) => ((outcome = 'granted'), p),
      (err: Error) => ((outcome = err.message), undefined),
    )
    await turn(30)
    expect(outcome).toBe('waiting')
    held.release()
    ;(await waiting)?.release()
    expect(outcome).toBe('granted')
    await limiter.close()
  })

  it('a deadline timer far away fires only then, one nearer fires on time', async () => {
    const deadlines = new Deadlines()
    let far = false
    const farWait = { deadline: Date.now() + MAX_TIMER_MS * 2, slot: -1, expire: () => void (far = true) }
    deadlines.add(farWait)
    let near = false
    deadlines.add({ deadline: Date.now() + 5, slot: -1, expire: () => void (near = true) })
    await turn(40)
    expect({ far, near }).toEqual({ far: false, near: true })
    deadlines.remove(farWait)
  })
})
