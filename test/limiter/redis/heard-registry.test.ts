import { describe, expect, it } from 'vitest'
import { HeardRegistry } from '../../../src/limiter/redis/heard-registry.js'
import { key } from './helpers.js'

// What a replica reads from its heartbeats (docs/redis-limiter.md, "Failure modes"): the registry
// going back in time, and the basis of its `local` shares.

const reading = (at: number, beats: Record<string, number>, before?: number) => ({
  at,
  beats: new Map(Object.entries(beats)),
  before,
})

describe('the registry as a replica heard it', () => {
  it('went back: its own last beat is not the one the heartbeat before wrote (or is gone)', () => {
    const heard = new HeardRegistry('a', 1_000)
    expect(heard.heard(reading(1_000, { a: 1_000 }), heard.sending())).toBe(false) // nothing to compare yet
    expect(heard.heard(reading(2_000, { a: 2_000 }, 1_000), heard.sending())).toBe(false)
    expect(heard.heard(reading(3_000, { a: 3_000 }, 1_000), heard.sending()), 'an older beat').toBe(true)
    expect(heard.heard(reading(4_000, { a: 4_000 }), heard.sending()), 'none').toBe(true)
  })

  it('a heartbeat that failed (it may have written) leaves the next one nothing to compare', () => {
    const heard = new HeardRegistry('a', 1_000)
    heard.heard(reading(1_000, { a: 1_000 }), heard.sending())
    heard.sending() // unanswered
    expect(heard.heard(reading(3_000, { a: 3_000 }, 2_000), heard.sending())).toBe(false)
  })

  it('falls back stale (over two heartbeats after sending its last answered one): takes no slot', () => {
    let now = 0
    const heard = new HeardRegistry('a', 1_000, () => now)
    for (const at of [1_000, 2_000, 3_000]) {
      now = at
      heard.heard(reading(at, { a: at }, at === 1_000 ? undefined : at - 1_000), heard.sending())
    }
    now = 5_000
    heard.fellBack()
    expect(heard.shareOf(key, 5)).toBe(5)
    now = 5_001
    heard.fellBack()
    expect(heard.shareOf(key, 5)).toBe(0)
    now = 7_000 // a script sent at 5,000 timed out now: the outage began by its send
    heard.fellBack(2_000)
    expect(heard.shareOf(key, 5)).toBe(5)
  })

  it('takes no slot before its run has lasted two heartbeats on one registry (after a start, a registry lost or rolled back, a fall-back)', () => {
    const beat = (heard: HeardRegistry, clock: { now: number }, at: number, before?: number): void => {
      clock.now = at
      heard.heard(reading(at, { a: at }, before), heard.sending())
    }
    const share = (beats: [number, number?][]): number => {
      const clock = { now: 0 }
      const heard = new HeardRegistry('a', 1_000, () => clock.now)
      for (const [at, before] of beats) beat(heard, clock, at, before)
      heard.fellBack()
      return heard.shareOf(key, 5)
    }
    expect(share([[1_000], [2_000, 1_000]]), 'a run of one heartbeat').toBe(0)
    expect(share([[1_000], [2_000, 1_000], [3_000, 2_000]]), 'of two').toBe(5)
    expect(share([[1_000], [2_000, 1_000], [3_000, 2_000], [4_000], [5_000, 4_000]]), 'its beat lost').toBe(0)
    expect(share([[1_000], [2_000, 1_000], [3_000, 2_000], [4_000, 2_000], [5_000, 4_000]]), 'rolled back').toBe(0)
    const clock = { now: 0 }
    const heard = new HeardRegistry('a', 1_000, () => clock.now)
    for (const [at, before] of [[1_000], [2_000, 1_000], [3_000, 2_000]]) beat(heard, clock, at!, before)
    heard.fellBack()
    beat(heard, clock, 4_000, 3_000) // back on Redis: perhaps another server
    beat(heard, clock, 5_000, 4_000)
    heard.fellBack()
    expect(heard.shareOf(key, 5), 'back from a fall-back one heartbeat ago').toBe(0)
  })
})
