import { describe, expect, it } from 'vitest'
import { drawSchedule, FAULT_KINDS } from '../../scripts/soak/schedule.js'

describe('npm run soak: the fault schedule drawn from a seed', () => {
  const o = { spanMs: 114_000, leaseMs: 1_000, replicas: 3 }

  it('the same seed gives the same faults; another seed, others', () => {
    expect(drawSchedule({ ...o, seed: 42 })).toEqual(drawSchedule({ ...o, seed: 42 }))
    expect(drawSchedule({ ...o, seed: 43 })).not.toEqual(drawSchedule({ ...o, seed: 42 }))
  })

  it('every kind of fault comes up, in the span, on a replica that exists, freezes of 1-3 leases', () => {
    const faults = drawSchedule({ ...o, seed: 7 })
    expect(new Set(faults.map((f) => f.kind))).toEqual(new Set(FAULT_KINDS))
    for (const f of faults) {
      expect(f.atMs).toBeLessThan(o.spanMs)
      expect(f.kind === 'kill-restart' ? [1, 2] : [0, 1, 2]).toContain(f.replica)
      if (f.kind === 'freeze') expect(f.leases).toBeGreaterThanOrEqual(1)
      if (f.kind === 'freeze') expect(f.leases).toBeLessThanOrEqual(3)
    }
    expect(faults.map((f) => f.atMs)).toEqual([...faults.map((f) => f.atMs)].sort((a, b) => a - b))
  })
})
