import { describe, expect, it } from 'vitest'
import { HeardRegistry } from '../../../src/limiter/redis/heard-registry.js'

// When a replica back from the `local` fallback may leave its share (docs/redis-limiter.md, "Failure
// modes"; return-gate.ts): every replica it heard alive has beaten since it came back (a replica beats
// only once its fallback permits are counted in Redis), or two heartbeats passed.

const reading = (at: number, beats: Record<string, number>, before?: number) => ({
  at,
  beats: new Map(Object.entries(beats)),
  before,
})

/** Replica a, beating every second with b beside it, falls back at 3.2 s and reads the registry at 10 s. */
function backAt10s(): HeardRegistry {
  let now = 0
  const heard = new HeardRegistry('a', 1_000, () => now)
  for (const at of [1_000, 2_000, 3_000]) {
    now = at
    heard.heard(reading(at, { a: at, b: at - 100 }, at === 1_000 ? undefined : at - 1_000), heard.sending())
  }
  now = 3_200
  heard.fellBack()
  now = 10_000
  heard.heard(reading(10_000, { a: 3_000, b: 2_900 }, 3_000), heard.sending(), false) // read only
  return heard
}

describe('a replica back from the local fallback', () => {
  it('waits for each replica it heard alive to beat since it came back', () => {
    const heard = backAt10s()
    expect(heard.othersBackSince(10_000), 'b not back yet').toBe(false)
    heard.heard(reading(10_250, { a: 10_250, b: 2_900 }, 3_000), heard.sending())
    expect(heard.othersBackSince(10_000), 'b still in local').toBe(false)
    heard.heard(reading(10_500, { a: 10_500, b: 10_400 }, 10_250), heard.sending())
    expect(heard.othersBackSince(10_000), 'b beat at 10.4 s').toBe(true)
  })

  it('gives a replica that does not come back up after two heartbeats', () => {
    const heard = backAt10s()
    heard.heard(reading(12_000, { a: 12_000, b: 2_900 }, 3_000), heard.sending())
    expect(heard.othersBackSince(10_000)).toBe(false)
    heard.heard(reading(12_001, { a: 12_001, b: 2_900 }, 12_000), heard.sending())
    expect(heard.othersBackSince(10_000)).toBe(true)
  })

  it('its run of beats begins with its first beat written, not with the reading that wrote none', () => {
    let now = 10_000
    const heard = new HeardRegistry('a', 1_000, () => now)
    // back: read only (its last beat before the outage still listed, unchanged)
    heard.heard(reading(10_000, { a: 9_000, b: 9_900 }, 9_000), heard.sending(), false)
    let before = 9_000
    for (const at of [10_250, 11_250, 12_100]) {
      now = at
      heard.heard(reading(at, { a: at, b: at - 50 }, before), heard.sending())
      before = at
    }
    heard.fellBack() // 1.85 s after its first beat: a run under two heartbeats claims nothing
    expect(heard.basis().claims).toBe(false)
  })
})
