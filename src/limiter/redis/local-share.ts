import { createHash } from 'node:crypto'
import type { PermitKey } from '../types.js'

/** One heartbeat's reading of the registry: Redis's time and each listed replica's last beat (Redis ms). */
export interface RegistryReading {
  readonly at: number
  readonly beats: ReadonlyMap<string, number>
  /** this replica's last beat as the heartbeat found it before writing (undefined: none listed) */
  readonly before?: number
}

/** What this replica's `local` shares rest on, fixed when it falls back (docs/redis-limiter.md, "Failure modes"). */
export interface ShareBasis {
  /** the replicas that may own a slot: every one listed that beat within `staleMs` of this replica's last beat */
  readonly live: readonly string[]
  /** whether this replica takes the slots it owns (else it owns them, so no other takes them, and serves none) */
  readonly claims: boolean
}

/** A replica that never heard the registry (or fell back long after it last did) serves nothing in `local`. */
export const NO_BASIS: ShareBasis = { live: [], claims: false }

/**
 * The basis of this replica's shares, from its last heartbeat's reading. `since` is the Redis time of
 * the first beat of its unbroken run (beats under `staleMs` apart on one registry that kept them, no
 * fall-back between); `fresh`: it fell back within `staleMs` of sending that last heartbeat. It claims
 * only when its run has lasted `staleMs` (every replica alive has beaten on this registry since, so
 * "only I am listed" proves something) and every other live replica has beaten since its run began
 * (each one's last reading lists it), so views that disagree — a replica just joined, one stalled and
 * back, one dead, a registry lost or rolled back — never let two replicas claim one slot: the proof is
 * in docs/redis-limiter.md, "Failure modes", and `local-share-property.test.ts` checks it.
 */
export function shareBasis(
  self: string,
  reading: RegistryReading | undefined,
  since: number,
  fresh: boolean,
  staleMs: number,
): ShareBasis {
  if (reading === undefined) return NO_BASIS
  const live = [...reading.beats].filter(([id, beat]) => id === self || reading.at - beat <= staleMs).map(([id]) => id)
  if (!live.includes(self)) live.push(self)
  const heardBy = (id: string): boolean => id === self || (reading.beats.get(id) ?? -Infinity) > since
  return { live, claims: fresh && reading.at - since >= staleMs && live.every(heardBy) }
}

const score = (key: PermitKey, slot: number, id: string): number =>
  createHash('sha1').update(`${key.instance}\n${key.endpoint}\n${slot}\n${id}`).digest().readUInt32BE(0)

/**
 * This replica's share of a key's limit in the `local` fallback: each of the limit's slots belongs to
 * the live replica a rendezvous hash of (key, slot, replica) ranks first, and a replica that claims
 * takes the slots it owns. One slot per hash, not whole shares and a remainder: a share computed from
 * the replica count moves a slot whenever two views count differently, a slot's owner only when the
 * owner itself is missing from a view. A share averages limit / n; a replica with share 0 queues.
 */
export function localShare(limit: number, key: PermitKey, self: string, basis: ShareBasis): number {
  if (!basis.claims) return 0
  let owned = 0
  for (let slot = 0; slot < limit; slot++) {
    const mine = score(key, slot, self)
    // the slot is mine if no other live replica ranks ahead (a higher score, or the same and a smaller id)
    const ahead = basis.live.some((id) => {
      if (id === self) return false
      const s = score(key, slot, id)
      return s > mine || (s === mine && id < self)
    })
    if (!ahead) owned++
  }
  return owned
}
