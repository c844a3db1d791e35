import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { HeardRegistry } from '../../../src/limiter/redis/heard-registry.js'
import type { PermitKey } from '../../../src/limiter/types.js'

// The `local` fallback's shares of a key add up to no more than its limit whatever each replica last
// heard from the heartbeat registry (docs/redis-limiter.md, "Failure modes"; LIMITER-CHECKLIST "A
// small limit in fallback"): replicas that joined, stalled, came back or died at any time before the
// outage, each falling back at its own moment after it. The registry is simulated as the heartbeat
// script keeps it (an entry per replica, its last beat, gone a lease after it) and read by the real
// HeardRegistry of each replica.

// Times in tenths of a ms (× 10 + the replica's index: no two beats at once)
const HEARTBEAT = 10_000 // staleMs = 2 heartbeats
const LEASE = 30_000 // the registry's ttl
const OUTAGE_AT = 20_000 // ms

interface Replica {
  readonly id: string
  readonly beats: readonly number[] // Redis time, distinct across replicas
  readonly fellBackAt: number
}

/** Runs every heartbeat in Redis's order and gives each replica what it heard. */
function hear(replicas: readonly Replica[]): Map<string, HeardRegistry> {
  const clock = new Map<string, number>()
  const heard = new Map(replicas.map((r) => [r.id, new HeardRegistry(r.id, HEARTBEAT, () => clock.get(r.id)!)]))
  const events = replicas.flatMap((r) => r.beats.map((at) => ({ id: r.id, at }))).sort((a, b) => a.at - b.at)
  const registry = new Map<string, number>()
  for (const { id, at } of events) {
    registry.set(id, at)
    for (const [other, beat] of registry) if (beat + LEASE <= at) registry.delete(other)
    heard.get(id)!.heard({ at, beats: new Map(registry) }, at) // sent at the latest when it ran
  }
  for (const r of replicas) {
    clock.set(r.id, r.fellBackAt)
    heard.get(r.id)!.fellBack()
  }
  return heard
}

const keys: PermitKey[] = Array.from({ length: 6 }, (_, i) => ({ instance: `org${i}`, endpoint: 'POST /x' }))

/** A replica's beats: from any start, gaps from 1 ms to past a lease (a stall), up to the outage. */
const replicaArb = (index: number): fc.Arbitrary<Replica> =>
  fc
    .record({
      start: fc.integer({ min: 0, max: OUTAGE_AT }),
      gaps: fc.array(fc.oneof(fc.integer({ min: 1, max: 1_200 }), fc.integer({ min: 1, max: 5_000 })), {
        maxLength: 30,
      }),
      late: fc.integer({ min: 0, max: 3_000 }),
      never: fc.boolean(), // never heard the registry (started while Redis was down)
    })
    .map(({ start, gaps, late, never }) => {
      const beats: number[] = []
      let at = start
      for (const gap of [0, ...gaps]) {
        at += gap
        if (at > OUTAGE_AT) break
        beats.push(at * 10 + index)
      }
      return { id: `r${index}.${index * 7919}`, beats: never ? [] : beats, fellBackAt: (OUTAGE_AT + late) * 10 }
    })

const sum = (heard: Map<string, HeardRegistry>, key: PermitKey, limit: number): number =>
  [...heard.values()].reduce((total, h) => total + h.shareOf(key, limit), 0)

describe('local shares over views of the registry that disagree', () => {
  it('add up to no more than the limit, whatever each replica last heard and whenever it fell back', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => replicaArb(i)))),
        fc.integer({ min: 1, max: 7 }),
        (replicas, limit) => {
          const heard = hear(replicas)
          for (const key of keys) expect(sum(heard, key, limit)).toBeLessThanOrEqual(limit)
        },
      ),
      { numRuns: 2_000 },
    )
  })

  it('add up to the limit when every replica beat steadily and fell back within two heartbeats', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 9_999 }), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 1, max: 7 }),
        fc.integer({ min: 0, max: 9_999 }),
        (offsets, limit, late) => {
          // beats every heartbeat (ms × 10, offsets distinct) from before the first to the outage
          const replicas = offsets.map((offset, i) => ({
            id: `r${i}.${offset}`,
            beats: Array.from({ length: 20 }, (_, k) => k * HEARTBEAT + offset),
            fellBackAt: 19 * HEARTBEAT + offset + late,
          }))
          const heard = hear(replicas)
          for (const key of keys) expect(sum(heard, key, limit)).toBe(limit)
        },
      ),
      { numRuns: 500 },
    )
  })
})
