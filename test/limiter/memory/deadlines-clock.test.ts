import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { Deadlines } from '../../../src/limiter/deadlines.js'

// The wall clock stepped back (NTP at boot, a VM resumed) after waits took their deadlines: each
// wait still ends after the time it was given, as its own setTimeout did before the waits shared
// one timer — not that time plus the step.
describe('deadlines on one timer, the wall clock stepped back', () => {
  beforeEach(() => void vi.useFakeTimers({ now: 10_000_000 }))
  afterEach(() => void vi.useRealTimers())

  it('every wait added before the step expires after its own wait, not the step later', () => {
    const deadlines = new Deadlines()
    const start = Date.now()
    const expired: number[] = []
    for (const ms of [100, 200, 300])
      deadlines.add({ deadline: start + ms, slot: -1, expire: () => void expired.push(ms) })
    vi.setSystemTime(start - 3_600_000) // one hour back; no timer moves
    vi.advanceTimersByTime(301)
    expect(expired).toEqual([100, 200, 300])
    expect(deadlines.size).toBe(0)
  })
})

describe('deadlines on one timer, an expiry that throws', () => {
  beforeEach(() => void vi.useFakeTimers({ now: 10_000_000 }))
  afterEach(() => void vi.useRealTimers())

  it('the waits after it still expire on time (the timer is armed again)', () => {
    const deadlines = new Deadlines()
    const start = Date.now()
    const expired: number[] = []
    deadlines.add({
      deadline: start + 10,
      slot: -1,
      expire: () => {
        throw new Error('a bug in one wait')
      },
    })
    deadlines.add({ deadline: start + 50, slot: -1, expire: () => void expired.push(50) })
    expect(() => vi.advanceTimersByTime(20)).toThrow('a bug in one wait')
    vi.advanceTimersByTime(40)
    expect(expired).toEqual([50])
    expect(vi.getTimerCount()).toBe(0)
  })
})
