import { performance } from 'node:perf_hooks'
import type { PermitKey } from '../types.js'
import { gcraGiveBack, gcraHold, gcraReserve, gcraSync, type GcraParams, type Rate, type Reservation } from './gcra.js'
import { logGiveBack, logNextFreeMs, logReserve, logSync } from './sliding-log.js'

/** Where start times are reserved: in process, or in Redis for every replica (docs/redis-limiter.md, "Rates"). */
export interface RateGate {
  /**
   * Reserves a start for `key` no later than `maxWaitMs` from now, or refuses without reserving. Never rejects.
   * The limiter takes its starts with `maxWaitMs` 0: a start is spent only when it is free now. `waiter`:
   * the asker's id, so starts go in the order askers began to wait on every replica (in process: the line).
   */
  reserve(key: PermitKey, params: GcraParams, maxWaitMs: number, waiter?: string): Reservation | Promise<Reservation>
  /** A start taken (its reservation's `tat`) and not sent: back, if nobody reserved after it. Never throws. */
  giveBack(key: PermitKey, params: GcraParams, tat: number): void
  /** Nobody starts on `key` for `forMs` (an upstream's Retry-After), whatever burst a later reservation has. Never throws. */
  hold(key: PermitKey, forMs: number, params: GcraParams): void
  /**
   * A rate learned from an answer (`rate`, its constants `params`), applied by every replica's reservations
   * for `ttlMs` and told to them (the in-process gate: nothing to share).
   */
  learn(key: PermitKey, params: GcraParams, ttlMs: number, rate?: Rate, source?: 'published' | 'learned'): void
  /**
   * Starts the API counted that the gate did not: `added` sent without a start from it (before the rate
   * was known), and at least `used` in the window (a spent quota: idempotent, every replica may say it).
   */
  sync(key: PermitKey, params: GcraParams, used: number, added: number): void
  /** A waiter that asked with its id leaves without a start: out of the gate's order of waiters. Never throws. */
  leave?(key: PermitKey, waiter: string): void
  /** An accepted start of a key whose rate its 429s teach, counted for every replica (absent: nothing to share). */
  countAccepted?(key: PermitKey, windowMs: number): void
  /** The accepted starts of the key within the last `windowMs`, every replica's; undefined when not known. */
  acceptedWithin?(key: PermitKey, windowMs: number): Promise<number | undefined>
  /** ms until the next start free on `key` as this replica last saw it, 0 when free now */
  nextFreeMs(key: PermitKey, params: GcraParams): number
  close(): void
}

const keyOf = (key: PermitKey): string => `${key.instance}\0${key.endpoint}`

/** How many reservations between sweeps of keys already past (a TAT and a hold in the past are the same as none). */
const SWEEP_EVERY = 1_024

/** One key's state: the TAT, and the end of a hold (kept apart, so no tolerance reaches into it). */
interface KeyState {
  tat: number
  holdUntil: number
  /** the last N start times, for a rate whose burst is its count (sliding-log.ts) */
  log?: number[]
  /** a hold is kept as long again past its end (as in Redis): the first start after it finds it, no burst */
  keep?: number
}

/**
 * The in-process gate: one TAT and one hold per key, on a monotonic clock (`performance.now()`: a
 * wall-clock step changes nothing). Also the Redis gate's fallback.
 */
export class MemoryRateGate implements RateGate {
  readonly #keys = new Map<string, KeyState>()
  #sinceSweep = 0

  constructor(private readonly now: () => number = () => performance.now()) {}

  reserve(key: PermitKey, params: GcraParams, maxWaitMs: number): Reservation {
    const now = this.now()
    if (++this.#sinceSweep >= SWEEP_EVERY) this.#sweep(now)
    const id = keyOf(key)
    const state = this.#keys.get(id)
    if (params.log !== undefined) {
      const r = logReserve(state?.log ?? [], now, params, maxWaitMs, state?.holdUntil ?? 0)
      if (r.reservation.granted) {
        // a log key's `tat` is when its last start leaves the window: the sweep keeps it until then
        const until = r.log[r.log.length - 1]! + params.windowMs
        if (state === undefined) this.#keys.set(id, { tat: until, holdUntil: 0, log: r.log })
        else Object.assign(state, { log: r.log, tat: Math.max(state.tat, until) })
      }
      return r.reservation
    }
    const { reservation, tat } = gcraReserve(state?.tat ?? 0, now, params, maxWaitMs, state?.holdUntil ?? 0)
    if (reservation.granted) {
      if (state === undefined) this.#keys.set(id, { tat, holdUntil: 0 })
      else state.tat = tat
    }
    return reservation
  }

  giveBack(key: PermitKey, params: GcraParams, tat: number): void {
    const state = this.#keys.get(keyOf(key))
    if (state === undefined) return
    if (params.log !== undefined) state.log = logGiveBack(state.log ?? [], tat)
    else state.tat = gcraGiveBack(state.tat, tat, params)
  }

  hold(key: PermitKey, forMs: number, params: GcraParams): void {
    const id = keyOf(key)
    const until = this.now() + forMs
    const state = this.#keys.get(id)
    const keep = until + forMs
    if (state === undefined) this.#keys.set(id, { tat: gcraHold(0, until, params), holdUntil: until, keep })
    else {
      state.tat = gcraHold(state.tat, until, params)
      state.holdUntil = Math.max(state.holdUntil, until)
      state.keep = Math.max(state.keep ?? 0, keep)
    }
  }

  learn(_key?: PermitKey, _params?: GcraParams, _ttlMs?: number): void {
    // one process: the wrapper's own record of the learned rate is all there is
  }

  sync(key: PermitKey, params: GcraParams, used: number, added: number): void {
    const now = this.now()
    const id = keyOf(key)
    const state = this.#keys.get(id) ?? { tat: 0, holdUntil: 0 }
    if (params.log !== undefined) {
      state.log = logSync(state.log ?? [], now, params, used, added)
      const last = state.log[state.log.length - 1]
      if (last !== undefined) state.tat = Math.max(state.tat, last + params.windowMs)
    } else state.tat = gcraSync(state.tat, now, params, used, added)
    this.#keys.set(id, state)
  }

  nextFreeMs(key: PermitKey, params: GcraParams): number {
    const state = this.#keys.get(keyOf(key))
    if (state === undefined) return 0
    const now = this.now()
    const next =
      params.log !== undefined ? logNextFreeMs(state.log ?? [], now, params) : state.tat - params.toleranceMs - now
    return Math.max(0, next, state.holdUntil - now)
  }

  /** drops a key's state (the Redis gate, once Redis holds what this replica reserved in a fallback) */
  forget(key: PermitKey): void {
    this.#keys.delete(keyOf(key))
  }

  /** keys with a TAT or a hold still ahead (tests read it: an idle key costs nothing once they have passed) */
  get size(): number {
    return this.#keys.size
  }

  #sweep(now: number): void {
    this.#sinceSweep = 0
    for (const [id, state] of this.#keys)
      if (state.tat <= now && state.holdUntil <= now && (state.keep ?? 0) <= now) this.#keys.delete(id)
  }

  close(): void {
    this.#keys.clear()
  }
}
