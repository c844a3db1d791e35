import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { HeardRegistry } from '../../../src/limiter/redis/heard-registry.js'
import type { PermitKey } from '../../../src/limiter/types.js'

// The `local` fallback's shares of a key add up to no more than its limit whatever each replica last
// heard from the heartbeat registry (docs/redis-limiter.md, "Failure modes"; LIMITER-CHECKLIST "A
// small limit in fallback"): replicas that joined, stalled, came back or died at any time before the
// outage, each falling back at its own moment after it; the registry emptied or put back to an
// earlier state (a flush, a restart without data, a failover to a copy behind) before it. The
// registry is simulated as the heartbeat script keeps it (an entry per replica, its last beat, gone a
// lease after it) and read by the real HeardRegistry of each replica.

// Times in tenths of a ms (× 10 + the replica's index: no two beats at once)
const HEARTBEAT = 10_000 // staleMs = 2 heartbeats
const LEASE = 30_000 // the registry's ttl
const OUTAGE_AT = 20_000 // ms

interface Replica {
  readonly id: string
  readonly beats: readonly number[] // Redis time, distinct across replicas
  readonly fellBackAt: number
}

/** Redis losing the registry at `at`: emptied (a flush, a restart without data), or put back to what it held at `to`. */
interface Loss {
  readonly at: number
  readonly to?: number
}

/** Runs every heartbeat (and loss) in Redis's order and gives each replica what it heard. */
function hear(replicas: readonly Replica[], losses: readonly Loss[] = []): Map<string, HeardRegistry> {
  const clock = new Map<string, number>()
  const heard = new Map(replicas.map((r) => [r.id, new HeardRegistry(r.id, HEARTBEAT, () => clock.get(r.id)!)]))
  const beats = replicas.flatMap((r) => r.beats.map((at) => ({ id: r.id, at })))
  const events: { id: string; at: number; to?: number }[] = [
    ...beats,
    ...losses.map((l) => ({ id: '', at: l.at * 10 + 9, to: l.to })),
  ].sort((a, b) => a.at - b.at)
  let registry = new Map<string, number>()
  const copies: { at: number; registry: Map<string, number> }[] = [{ at: 0, registry: new Map() }]
  for (const event of events) {
    if (event.id === '') {
      const to = event.to === undefined ? undefined : event.to * 10
      registry = new Map(to === undefined ? [] : copies.filter((c) => c.at <= to).at(-1)!.registry)
      continue
    }
    const { id, at } = event
    const before = registry.get(id)
    registry.set(id, at)
    for (const [other, beat] of registry) if (beat + LEASE <= at) registry.delete(other)
    copies.push({ at, registry: new Map(registry) })
    heard.get(id)!.sending()
    heard.get(id)!.heard({ at, beats: new Map(registry), before }, at) // sent at the latest when it ran
  }
  for (const r of replicas) {
    clock.set(r.id, r.fellBackAt)
    heard.get(r.id)!.fellBack()
  }
  return heard
}

const keys: PermitKey[] = Array.from({ length: 6 }, (_, i) => ({ instance: `org${i}`, endpoint: 'POST /x' }))

/** A replica beating steadily (a heartbeat, a little jitter) from near the start to the outage. */
const steadyArb = (index: number): fc.Arbitrary<Replica> =>
  fc
    .record({
      start: fc.integer({ min: 0, max: 3_000 }),
      jitter: fc.array(fc.integer({ min: 0, max: 150 }), { minLength: 25, maxLength: 25 }),
      late: fc.integer({ min: 0, max: 2_500 }),
    })
    .map(({ start, jitter, late }) => {
      const beats: number[] = []
      for (let at = start, k = 0; at <= OUTAGE_AT; at += 1_000 + jitter[k++ % jitter.length]!)
        beats.push(at * 10 + index)
      return { id: `r${index}.${index * 7919}`, beats, fellBackAt: (OUTAGE_AT + late) * 10 }
    })

/** A replica's beats: steady, or from any start with gaps from 1 ms to past a lease (a stall), up to the outage. */
const replicaArb = (index: number): fc.Arbitrary<Replica> => fc.oneof(steadyArb(index), randomArb(index))

const randomArb = (index: number): fc.Arbitrary<Replica> =>
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
  it('add up to no more than the limit, whatever each replica last heard and whenever it fell back, the registry flushed or rolled back or not', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => replicaArb(i)))),
        fc.integer({ min: 1, max: 7 }),
        fc.array(
          fc
            .record({ at: fc.integer({ min: 0, max: OUTAGE_AT }), back: fc.integer({ min: 0, max: 6_000 }) })
            .chain(({ at, back }) => fc.constantFrom<Loss>({ at }, { at, to: Math.max(0, at - back) })),
          { maxLength: 2 },
        ),
        (replicas, limit, losses) => {
          const heard = hear(replicas, losses)
          for (const key of keys) expect(sum(heard, key, limit)).toBeLessThanOrEqual(limit)
        },
      ),
      { numRuns: 3_000 },
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
