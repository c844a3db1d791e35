import { BoundedMap } from '../../bounded/index.js'
import type { PermitKey } from '../types.js'
import { NO_BASIS, localShare, shareBasis, type RegistryReading, type ShareBasis } from './local-share.js'

/** Shares remembered per (key, limit) while the basis holds: a slot's owner is a hash per replica listed. */
const REMEMBERED_SHARES = 10_000

/**
 * What this replica last heard from the heartbeat registry, and the basis of its `local` shares taken
 * when it falls back (docs/redis-limiter.md, "Failure modes"). `staleMs`, two heartbeat periods (a
 * replica that missed one beat owns no slot), is both how old another replica's last beat may be to
 * still own slots, and how long after its own last heartbeat was sent this replica may fall back and
 * still claim: one bound for both is what keeps two claims apart.
 */
export class HeardRegistry {
  #reading: RegistryReading | undefined
  /** monotonic ms the last heartbeat that was answered was sent */
  #sentAt = -Infinity
  /** Redis ms of the first beat of this replica's unbroken run */
  #since = -Infinity
  #basis: ShareBasis = NO_BASIS
  /** heartbeats sent since the last one answered: one failed (its write unknown) leaves nothing to check */
  #unanswered = 0
  /** fell back since the last reading */
  #out = false
  readonly #shares = new BoundedMap<string, number>(REMEMBERED_SHARES)

  readonly staleMs: number

  constructor(
    private readonly self: string,
    heartbeatMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.staleMs = 2 * heartbeatMs
  }

  /** How many replicas the registry listed at the last heartbeat (this one at least). */
  replicas(): number {
    return Math.max(1, this.#reading?.beats.size ?? 0)
  }

  /** A heartbeat is sent now: returns the monotonic time to hand to `heard` with its answer. */
  sending(): number {
    this.#unanswered++
    return this.now()
  }

  /**
   * A heartbeat sent at `sentAt` was answered with `reading`. True when the registry went back in
   * time: this replica's last beat, written by the heartbeat before (answered, none lost between), is
   * not what this one found — a rollback even on keys idle here (docs/redis-limiter.md, "Failure modes").
   */
  heard(reading: RegistryReading, sentAt: number): boolean {
    const wrote = this.#reading?.beats.get(this.self)
    const unbroken = this.#unanswered === 1 && wrote !== undefined && reading.before === wrote
    const wentBack = this.#unanswered === 1 && wrote !== undefined && reading.before !== wrote
    // A new run unless this beat follows the last one on the same registry: none lost or unanswered
    // between, no fall-back (a reconnect may reach another server, with its own clock), no gap.
    if (!unbroken || this.#out || reading.at - this.#reading!.at > this.staleMs) this.#since = reading.at
    this.#unanswered = 0
    this.#out = false
    this.#reading = reading
    this.#sentAt = sentAt
    this.#shares.clear() // kept only through an outage (the basis changes only when falling back)
    return wentBack
  }

  /**
   * This replica falls back now: the shares rest on what it heard until it is back in `redis`. A
   * script that timed out failed `failedAgoMs` ago: the outage began by its send, not by its timeout.
   */
  fellBack(failedAgoMs = 0): void {
    this.#out = true
    const fresh = this.now() - failedAgoMs - this.#sentAt <= this.staleMs
    this.#basis = shareBasis(this.self, this.#reading, this.#since, fresh, this.staleMs)
    this.#shares.clear()
  }

  basis(): ShareBasis {
    return this.#basis
  }

  shareOf(key: PermitKey, limit: number): number {
    const name = `${limit}\n${key.instance}\n${key.endpoint}`
    let share = this.#shares.get(name)
    if (share === undefined) {
      share = localShare(limit, key, this.self, this.#basis)
      this.#shares.set(name, share)
    }
    return share
  }
}
