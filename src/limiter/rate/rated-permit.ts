import { performance } from 'node:perf_hooks'
import type { Permit, PermitOutcome } from '../types.js'

/** What a permit of a rated key needs besides its inner permit. */
export interface StartTaken {
  /** when the start was taken (monotonic ms) */
  readonly at: number
  /** longer than this between the start and its hand-over to undici, and the start is no longer the one taken: checked again */
  readonly slackMs: number
  /** the request waited for its start (the rate bound it) */
  readonly waited: boolean
  /** the client's signal: a client gone before the send does not spend the start */
  readonly signal: AbortSignal | undefined
  /** gives the taken start back (called at most once, only when nothing was sent) */
  giveBack(): void
  /** requests of this key wait for their start on this replica now */
  rateBinds(): boolean
}

/**
 * A permit whose start was taken from the rate gate (docs/redis-limiter.md, "Rates"). The start is spent
 * when the request is sent; one not handed to undici in time — a client gone, a late timer, a stall — is
 * given back, and the request waits again at its place (`canStart()` false). Lateness is measured to the
 * first `canStart()` that said yes (the hand-over), not to the write: the connection undici makes after
 * it (TCP + TLS, often longer than the slack) would otherwise hold back every attempt and destroy each
 * fresh socket. A success while the rate binds says nothing about the concurrency limit: released as no word.
 */
export class RatedPermit implements Permit {
  readonly startCounted = true
  #sent = false
  #givenBack = false
  /** a `canStart()` said yes within the slack: the start is this request's until it is sent or released */
  #handed = false

  constructor(
    private readonly inner: Permit,
    private readonly start: StartTaken,
  ) {}

  get lost(): AbortSignal {
    return this.inner.lost
  }

  get isLost(): boolean {
    return this.inner.isLost
  }

  get waitedMs(): number {
    return this.inner.waitedMs
  }

  canStart(): boolean {
    if (!this.inner.canStart()) return false
    if (this.#sent) return true
    if (this.#givenBack) return false
    if (
      this.start.signal?.aborted === true ||
      (!this.#handed && performance.now() - this.start.at > this.start.slackMs)
    ) {
      this.#giveBack()
      return false
    }
    this.#handed = true
    return true
  }

  markSent(): void {
    this.#sent = true
    this.inner.markSent()
  }

  release(outcome?: PermitOutcome): void {
    if (!this.#sent) this.#giveBack()
    // waiting for a start is not concurrency saturation (docs/learned-limits.md, "Rates")
    const said = outcome === 'success' && (this.start.waited || this.start.rateBinds()) ? 'neutral' : outcome
    this.inner.release(said)
  }

  #giveBack(): void {
    if (this.#givenBack) return
    this.#givenBack = true
    this.start.giveBack()
  }
}
