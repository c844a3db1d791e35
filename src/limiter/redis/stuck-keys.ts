import type { KeyStatus, PermitKey } from '../types.js'
import type { SemaphoreStatus } from './status/index.js'

/** Who holds a stuck key, as logged (replica ids and app names: no secret). */
export type StuckHolders = NonNullable<KeyStatus['holders']>

/**
 * Keys with waiters and no grant for longer than a lease (docs/redis-limiter.md, "Status and metrics"),
 * from the status reads this replica makes (each scrape, each `/status`): a key is stuck when its
 * holders and its head waiter — which every grant changes — are the same as at a read more than a
 * lease ago. Each stuck spell is told once (`tell`: the key and its holders). It keeps only the keys
 * of the last read that have waiters, so it follows the busy keys.
 */
export class StuckKeys {
  readonly #seen = new Map<string, { progress: string; since: number; told: boolean }>()

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
      let seen = this.#seen.get(id)
      if (seen === undefined || seen.progress !== progress) {
        seen = { progress, since: now, told: false }
        this.#seen.set(id, seen)
      }
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
}
