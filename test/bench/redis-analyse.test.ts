import { describe, expect, it } from 'vitest'
import { analyse } from '../../bench/redis/analyse.js'

// The figures the README quotes for the Redis limiter come from here.
describe('bench/redis analyse', () => {
  it('pairs each grant with the oldest unpaired release before it; only cross-process pairs are handoffs', () => {
    // limit 1, two processes: p0 holds 0–20, p1 gets it at 21 (handoff 1 ms), p1 releases at 41 and
    // takes it straight back at 41.5 (a regrant, no handoff), then p0 gets it at 63.5 (handoff 2 ms)
    const holds: [number, number][][] = [
      [
        [0, 20],
        [63.5, 83.5],
      ],
      [
        [21, 41],
        [41.5, 61.5],
      ],
    ]
    const f = analyse(holds, 1)
    expect(f.requests).toBe(4)
    expect(f.handoffs).toBe(2)
    expect(f.handoffP50).toBe(1)
    expect(f.handoffP99).toBe(2)
    expect(f.regrantShare).toBeCloseTo(1 / 3)
    expect(f.utilisation).toBeCloseTo(80 / 83.5)
  })

  it('counts busy time against limit × wall time', () => {
    const f = analyse([[[0, 10]], [[0, 10]], [[10, 20]]], 2)
    expect(f.utilisation).toBeCloseTo(30 / 40)
    expect(f.regrantShare).toBe(0)
  })
})
