import type { SluicePermit, Ticket } from './ticket.js'

/** A permit this replica holds from Redis. */
export interface Held {
  readonly permit: SluicePermit
  /** the lease lasts at least until then (monotonic ms): a lower bound from when the grant or the last renewal was sent */
  readonly leaseUntil: number
  /** when this replica got the permit (monotonic ms): a learned limit's decrease window reads it */
  readonly grantedAt: number
  /** when Redis last granted it (monotonic ms): later than grantedAt only for a kept permit used again */
  readonly since: number
}

/** A permit held here with no request on it, kept for this replica's next request of its app (kept-permits.ts). */
export interface Kept {
  readonly id: string
  readonly app: string
  /** the limit argument it was kept under (keys.ts limitArg): another one makes it go back */
  readonly arg: string
  readonly leaseUntil: number
  readonly since: number
}

/** A permit given back: `heldAll`, this replica held every permit of the key (KeySemaphore.handOver). */
export interface TakenBack {
  readonly heldAll: boolean
  readonly leaseUntil: number
  readonly grantedAt: number
  readonly since: number
}

/** The leases a sync's reply speaks of (KeySemaphore.synced). */
export interface SyncedLeases {
  readonly lost: readonly string[]
  readonly recounted: readonly string[]
  /** the renewed leases last at least until then */
  readonly leaseUntil: number
}

/** Permits a sync's reply took from this replica: `lost` (lease gone), `unsent` (counted again before their request was sent). */
export interface LeftHere {
  readonly lost: readonly SluicePermit[]
  readonly unsent: readonly { readonly id: string; readonly permit: SluicePermit }[]
}

/** What others may read of a key's held permits (KeySemaphore.held): they change only through KeySemaphore's verbs. */
export type HeldView = Pick<HeldPermits, 'size' | 'get' | 'has' | 'kept' | 'permits' | 'others'>

/**
 * The permits one key's semaphore holds here, by Redis id, with a lower bound of each lease (docs/
 * redis-limiter.md, "Leases"). Part of KeySemaphore, which decides when one is given back or handed over.
 */
export class HeldPermits {
  readonly #held = new Map<string, { permit: SluicePermit; leaseUntil: number; grantedAt: number; since: number }>()
  #others = 0
  /** at most one per key; counted in `size` (Redis counts it), never renewed (a sync gives it back) */
  #kept: Kept | undefined
  /** kept permits whose reuse script is on its way, with their requests: ours in Redis, so counted in `size` and kept by a sync */
  #reusing: Map<string, Ticket> | undefined // made on first use: an uncontended key makes no collection more

  /**
   * Redis counted `total` permits of the key (a queued acquire's or a sync's reply): the others'
   * are kept, so the local fallback counts their permits still in flight (docs/redis-limiter.md, "Failure modes").
   */
  heardTotal(total: number | undefined): void {
    if (total !== undefined) this.#others = Math.max(0, total - this.size)
  }

  /** Other replicas' permits as Redis last counted them (0 when never heard: an uncontended key). */
  get others(): number {
    return this.#others
  }

  /** permits held here, a kept one included */
  get size(): number {
    return this.#held.size + (this.#reusing?.size ?? 0) + (this.#kept === undefined ? 0 : 1)
  }

  /** The ids of kept permits whose reuse is on its way (a reconciling sync must spare them). */
  reusingIds(): string[] {
    return this.#reusing === undefined ? [] : [...this.#reusing.keys()]
  }

  /** A kept permit's reuse script goes out for `ticket`. */
  reuseSent(id: string, ticket: Ticket): void {
    ;(this.#reusing ??= new Map()).set(id, ticket)
  }

  /** Its reply (or failure) came: false when the request went to the fallback meanwhile (detachReuses). */
  reuseEnded(id: string): boolean {
    return this.#reusing?.delete(id) ?? false
  }

  /** Redis became unreachable: the requests whose reuse is on its way go to the fallback, like queued acquires. */
  detachReuses(): { readonly ids: string[]; readonly tickets: Ticket[] } {
    const reusing = this.#reusing ?? new Map<string, Ticket>()
    this.#reusing = undefined
    return { ids: [...reusing.keys()], tickets: [...reusing.values()] }
  }

  get(id: string): Held | undefined {
    return this.#held.get(id)
  }

  /** Held here under `id`: in use, kept, or kept and its `reuse` on its way (a grant message for it is no ghost's) */
  has(id: string): boolean {
    return this.#held.has(id) || this.#kept?.id === id || this.#reusing?.has(id) === true
  }

  get kept(): Kept | undefined {
    return this.#kept
  }

  /** A permit given back by its request stays here for the next one, or (none) the kept one leaves: the one before is returned. */
  swapKept(kept: Kept | undefined): Kept | undefined {
    const before = this.#kept
    this.#kept = kept
    return before
  }

  ids(): string[] {
    return [...this.#held.keys()]
  }

  /** The ids to renew, those whose lease lasts past `sureUntil` first (a sync finding one missing sees a rollback), and how many those are. */
  renewing(sureUntil: number): { readonly ids: string[]; readonly sure: number } {
    const sure: string[] = []
    const rest: string[] = []
    for (const [id, held] of this.#held) (held.leaseUntil > sureUntil ? sure : rest).push(id)
    return { ids: sure.length === 0 ? rest : [...sure, ...rest], sure: sure.length }
  }

  permits(): SluicePermit[] {
    return [...this.#held.values()].map((h) => h.permit)
  }

  /** A grant (or an adoption) made this permit ours, under `id`. */
  hold(id: string, permit: SluicePermit, leaseUntil: number, grantedAt: number, since = grantedAt): void {
    this.#held.set(id, { permit, leaseUntil, grantedAt, since })
  }

  /** Given back or handed over: no longer ours. What it was, or undefined when `permit` is not held under `id` (lost already). */
  takeBack(id: string, permit: SluicePermit, heldAll: boolean): TakenBack | undefined {
    const held = this.#held.get(id)
    if (held?.permit !== permit) return undefined
    this.#held.delete(id)
    return { heldAll, leaseUntil: held.leaseUntil, grantedAt: held.grantedAt, since: held.since }
  }

  /** Redis no longer counts this permit (its lease ran out and was purged): it is lost. */
  lose(id: string): SluicePermit | undefined {
    const held = this.#held.get(id)
    if (held === undefined) return undefined
    this.#held.delete(id)
    return held.permit
  }

  /** Redis lost its data and counted these again: one not sent yet leaves, returned as lost (docs/redis-limiter.md, "Failure modes"). */
  recounted(ids: readonly string[]): { readonly id: string; readonly permit: SluicePermit }[] {
    const unsent: { id: string; permit: SluicePermit }[] = []
    for (const id of ids) {
      const held = this.#held.get(id)
      if (held === undefined || held.permit.sent) continue
      this.#held.delete(id)
      unsent.push({ id, permit: held.permit })
    }
    return unsent
  }

  /** A sync renewed these leases (those still held): each lasts at least until `leaseUntil`. */
  renewed(ids: readonly string[], leaseUntil: number): void {
    for (const id of ids) {
      const held = this.#held.get(id)
      if (held) held.leaseUntil = Math.max(held.leaseUntil, leaseUntil)
    }
  }
}
