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
    heard.heard(reading(1_000, { a: 1_000 }), heard.sending())
    now = 2_000
    heard.fellBack()
    expect(heard.shareOf(key, 5)).toBe(5)
    now = 2_001
    heard.fellBack()
    expect(heard.shareOf(key, 5)).toBe(0)
  })
})
