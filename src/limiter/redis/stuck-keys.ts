import type { KeyStatus, PermitKey } from '../types.js'
import type { SemaphoreStatus } from './status/index.js'

/** Who holds a stuck key, as logged (replica ids and app names: no secret). */
export type StuckHolders = NonNullable<KeyStatus['holders']>

/** What the last read saw of a key: the holders' ids, and the oldest wait then. */
interface Seen {
  progress: string
  holders: ReadonlySet<string>
  oldestWaitMs: number
  at: number
  since: number
  told: boolean
}

/**
 * Keys with waiters and no request served for longer than a lease (docs/redis-limiter.md, "Status and
 * metrics"), from the status reads this replica makes (each scrape, each `/status`). A read shows a
 * request served when a holder is new and its request could have been waiting at the previous read:
 * its age (from the arrival in its id) no more than that read's oldest wait plus the time since, or a
 * lease. A grant to a ghost — an entry a failover brought back, whose request arrived long before any
 * waiter now queued — is no progress, nor is a waiter leaving the head unserved. Each stuck spell is
 * told once (`tell`: the key and its holders). It keeps only the keys of the last read that have
 * waiters, so it follows the busy keys.
 */
export class StuckKeys {
  readonly #seen = new Map<string, Seen>()

  constructor(
    private readonly leaseMs: number,
    private readonly now: () => number,
    private readonly tell: (key: PermitKey, holders: StuckHolders) => void,
  ) {}

  /** One status read: the keys as `/status` shows them, each stuck one with `stuckMs`. */
  read(keys: readonly SemaphoreStatus[]): KeyStatus[] {
    const now = this.now()
    const kept = new Set<string>()
    const out = keys.map(({ progress, ...key }): KeyStatus => {
      if (key.queued === 0) return key
      const id = `${key.instance}\n${key.endpoint}`
      kept.add(id)
      const ids = progress.split(' ').filter((x) => x !== '' && !x.startsWith('|'))
      let seen = this.#seen.get(id)
      if (seen === undefined || (seen.progress !== progress && this.#served(seen, ids, key.holders ?? [], now)))
        seen = { progress, holders: new Set(), oldestWaitMs: 0, at: now, since: now, told: false }
      seen.progress = progress
      seen.holders = new Set(ids)
      seen.oldestWaitMs = key.oldestWaitMs
      seen.at = now
      this.#seen.set(id, seen)
      const stuckMs = now - seen.since
      if (stuckMs <= this.leaseMs) return key
      if (!seen.told) {
        seen.told = true
        this.tell(key, key.holders ?? [])
      }
      return { ...key, stuckMs: Math.round(stuckMs) }
    })
    for (const id of this.#seen.keys()) if (!kept.has(id)) this.#seen.delete(id)
    return out
  }

  /** A holder new since the last read whose request could have been one of the waiters then (or of unknown age). */
  #served(seen: Seen, ids: readonly string[], holders: StuckHolders, now: number): boolean {
    const youngest = Math.max(this.leaseMs, seen.oldestWaitMs + (now - seen.at))
    return ids.some((id, i) => {
      if (seen.holders.has(id)) return false
      const age = holders[i]?.ageMs ?? -1
      return age < 0 || age <= youngest
    })
  }
}
