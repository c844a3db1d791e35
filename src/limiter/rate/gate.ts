import type { PermitKey } from '../types.js'
import { gcraHold, gcraReserve, type GcraParams, type Reservation } from './gcra.js'

/** Where start times are reserved: in process, or in Redis for every replica (docs/redis-limiter.md, "Rates"). */
export interface RateGate {
  /** Reserves a start for `key` no later than `maxWaitMs` from now, or refuses without reserving. Never rejects. */
  reserve(key: PermitKey, params: GcraParams, maxWaitMs: number): Reservation | Promise<Reservation>
  /** Nobody starts on `key` for `forMs` (an upstream's Retry-After). Never throws. */
  hold(key: PermitKey, forMs: number, params: GcraParams): void
  /** A rate learned from an answer, applied by every replica's reservations for `ttlMs` (the in-process gate: nothing to share). */
  learn(key: PermitKey, params: GcraParams, ttlMs: number): void
  /** ms until the next start free on `key` as this replica last saw it, 0 when free now */
  nextFreeMs(key: PermitKey, params: GcraParams): number
  close(): void
}

const keyOf = (key: PermitKey): string => `${key.instance}\0${key.endpoint}`

/** How many reservations between sweeps of TATs already past (a TAT in the past is the same as none). */
const SWEEP_EVERY = 1_024

/** The in-process gate: one TAT per key, the replica's clock. Also the Redis gate's fallback. */
export class MemoryRateGate implements RateGate {
  readonly #tats = new Map<string, number>()
  #sinceSweep = 0

  constructor(private readonly now: () => number = Date.now) {}

  reserve(key: PermitKey, params: GcraParams, maxWaitMs: number): Reservation {
    const now = this.now()
    if (++this.#sinceSweep >= SWEEP_EVERY) this.#sweep(now)
    const id = keyOf(key)
    const { reservation, tat } = gcraReserve(this.#tats.get(id) ?? 0, now, params, maxWaitMs)
    if (reservation.granted) this.#tats.set(id, tat)
    return reservation
  }

  hold(key: PermitKey, forMs: number, params: GcraParams): void {
    const id = keyOf(key)
    this.#tats.set(id, gcraHold(this.#tats.get(id) ?? 0, this.now() + forMs, params))
  }

  learn(): void {
    // one process: the wrapper's own record of the learned rate is all there is
  }

  nextFreeMs(key: PermitKey, params: GcraParams): number {
    const tat = this.#tats.get(keyOf(key))
    return tat === undefined ? 0 : Math.max(0, tat - params.toleranceMs - this.now())
  }

  /** drops a key's TAT (the Redis gate, once Redis holds what this replica reserved in a fallback) */
  forget(key: PermitKey): void {
    this.#tats.delete(keyOf(key))
  }

  /** keys with a TAT still ahead (tests read it: an idle key costs nothing once its TAT has passed) */
  get size(): number {
    return this.#tats.size
  }

  #sweep(now: number): void {
    this.#sinceSweep = 0
    for (const [id, tat] of this.#tats) if (tat <= now) this.#tats.delete(id)
  }

  close(): void {
    this.#tats.clear()
  }
}
