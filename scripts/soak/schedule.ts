/**
 * The soak's fault schedule, drawn from a seed: the same seed and duration give the same faults at
 * the same times, so a failing run can be run again (docs/faults.md).
 */

export type FaultKind =
  'freeze' | 'kill-restart' | 'redis-restart' | 'redis-restart-empty' | 'script-flush' | 'pubsub-kill'

export const FAULT_KINDS: readonly FaultKind[] = [
  'freeze',
  'kill-restart',
  'redis-restart',
  'redis-restart-empty',
  'script-flush',
  'pubsub-kill',
]

export interface Fault {
  /** ms after the start of the faults */
  readonly atMs: number
  readonly kind: FaultKind
  /** which replica (freeze, kill-restart); replica 0 is never killed, so its RSS spans the whole run */
  readonly replica: number
  /** how long: a freeze in leases (1-3), how long Redis stays down in leases (0.5-2) */
  readonly leases: number
}

/** mulberry32: a small, well-mixed 32-bit generator; enough for a schedule, not for secrets. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export interface ScheduleOptions {
  readonly seed: number
  /** faults start at 0 and none starts after this */
  readonly spanMs: number
  readonly leaseMs: number
  readonly replicas: number
}

/**
 * Faults one after another, each kind in turn of a shuffled round so every kind comes up, with a
 * quiet gap of 1-4 leases after each (the time a fault takes is the runner's: `atMs` is the earliest start).
 */
export function drawSchedule(o: ScheduleOptions): Fault[] {
  const random = seededRandom(o.seed)
  const faults: Fault[] = []
  let at = 2 * o.leaseMs
  let round: FaultKind[] = []
  while (at < o.spanMs) {
    if (round.length === 0) round = shuffle([...FAULT_KINDS], random)
    const kind = round.pop()!
    const leases = kind === 'freeze' ? 1 + 2 * random() : 0.5 + 1.5 * random()
    const replica =
      kind === 'kill-restart' ? 1 + Math.floor(random() * (o.replicas - 1)) : Math.floor(random() * o.replicas)
    faults.push({ atMs: Math.round(at), kind, replica, leases: Math.round(leases * 100) / 100 })
    const takes = kind === 'freeze' || kind.startsWith('redis') ? leases * o.leaseMs : 0
    at += takes + (1 + 3 * random()) * o.leaseMs
  }
  return faults
}

function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[items[i], items[j]] = [items[j]!, items[i]!]
  }
  return items
}
