import { enforced, initialState, learn, type Feedback, type LearnBounds, type LearnedState } from './rule.js'

interface Entry {
  state: LearnedState
  usedAt: number
  idleMs: number
  bounds: LearnBounds
}

/** One learned limit, as `/status` lists it. */
export interface LearnedEntry {
  readonly id: string
  readonly limit: number
  readonly value: number
  readonly ceiling: number
}

/** How many updates between two sweeps of forgotten entries (a sweep reads them all). */
const SWEEP_EVERY = 1_024

/** Learned limits of the in-process backend: one state per key, forgotten after its `idleMs` unused (checked on use, swept now and then). */
export class LearnedLimits {
  readonly #entries = new Map<string, Entry>()
  #updates = 0

  constructor(private readonly now: () => number) {}

  #entry(id: string, now: number): Entry | undefined {
    const entry = this.#entries.get(id)
    if (entry !== undefined && now - entry.usedAt > entry.idleMs) {
      this.#entries.delete(id)
      return undefined
    }
    return entry
  }

  /** Whether anything was learned for the key (an entry that expired may still count). */
  has(id: string): boolean {
    return this.#entries.has(id)
  }

  /** The whole number of permits the key's learned value allows now. */
  limitOf(id: string, bounds: LearnBounds): number {
    const entry = this.#entry(id, this.now())
    return enforced(entry === undefined ? bounds.start : entry.state.value, bounds)
  }

  /** The learned value now (the start when nothing was learned). */
  valueOf(id: string, bounds: LearnBounds): number {
    return this.#entry(id, this.now())?.state.value ?? bounds.start
  }

  /** Applies one answer; returns the whole limit before and after, and the value after. */
  apply(
    id: string,
    bounds: LearnBounds,
    idleMs: number,
    fb: Omit<Feedback, 'now'>,
  ): { from: number; to: number; value: number } {
    const now = this.now()
    const entry = this.#entry(id, now)
    const before = entry?.state ?? initialState(bounds)
    const state = learn(before, bounds, { ...fb, now })
    // nothing learned yet (successes of a key not saturated): no entry made for it
    if (
      entry !== undefined ||
      state.value !== before.value ||
      state.bad !== before.bad ||
      state.cutAt !== before.cutAt
    ) {
      // re-inserted, so the map stays in the order of last use
      this.#entries.delete(id)
      this.#entries.set(id, { state, usedAt: now, idleMs, bounds })
    }
    if (++this.#updates % SWEEP_EVERY === 0) this.#sweep(now)
    return { from: enforced(before.value, bounds), to: enforced(state.value, bounds), value: state.value }
  }

  #sweep(now: number): void {
    for (const [id, entry] of this.#entries) if (now - entry.usedAt > entry.idleMs) this.#entries.delete(id)
  }

  /**
   * The most recently used learned limits, newest first. The map is in the order of use, oldest first:
   * one pass keeps the last `max` live ones in a ring, so `/status` never copies every entry.
   */
  list(max = 1_000): LearnedEntry[] {
    if (max <= 0) return []
    const now = this.now()
    const ring: [string, Entry][] = []
    let next = 0
    for (const pair of this.#entries) {
      if (now - pair[1].usedAt > pair[1].idleMs) continue
      if (ring.length < max) ring.push(pair)
      else ring[next] = pair
      next = (next + 1) % max
    }
    const out: LearnedEntry[] = []
    for (let i = 1; i <= ring.length; i++) {
      const [id, entry] = ring[(next - i + ring.length * 2) % ring.length]!
      out.push({
        id,
        limit: enforced(entry.state.value, entry.bounds),
        value: entry.state.value,
        ceiling: entry.bounds.ceiling,
      })
    }
    return out
  }

  get size(): number {
    return this.#entries.size
  }
}
