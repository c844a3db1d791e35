import type { StoredAnswer } from './answer.js'

/**
 * How a shared call ended for the requests that followed it: its answer, or no answer — `retry` when
 * the leading request gave up before the API answered (its client left, its wait ran out), so the
 * followers may try to share again; `alone` when the answer could not be shared (too large, broken
 * off), so each makes its own call.
 */
export type CallResult = { readonly answer: StoredAnswer } | { readonly own: 'retry' | 'alone' }

/** One upstream call that identical requests may still join. */
export class SharedCall {
  followers = 0
  #settle!: (result: CallResult) => void
  #settled = false
  readonly result: Promise<CallResult>

  constructor(
    readonly key: string,
    /** the leading request's deadline: a request that must be answered sooner does not follow it */
    readonly deadline: number,
  ) {
    this.result = new Promise<CallResult>((resolve) => (this.#settle = resolve))
  }

  get settled(): boolean {
    return this.#settled
  }

  settle(result: CallResult): void {
    if (this.#settled) return
    this.#settled = true
    this.#settle(result)
  }
}

export type Joined = { readonly lead: SharedCall } | { readonly follow: SharedCall }

/**
 * Calls that identical requests may join, by request key (see ReuseKeys). A call is joinable until
 * its answer starts: a request arriving later makes its own call rather than wait for part of one.
 */
export class Coalescer {
  readonly #open = new Map<string, SharedCall>()

  /** Follows the open call for `key`, or opens one that this request leads. */
  join(key: string, deadline: number): Joined {
    const call = this.#open.get(key)
    // A follower waits as long as its leader does; one that must be answered sooner leads its own call.
    if (call !== undefined && call.deadline <= deadline) {
      call.followers++
      return { follow: call }
    }
    const lead = new SharedCall(key, deadline)
    if (call === undefined) this.#open.set(key, lead)
    return { lead }
  }

  /** The call's answer has started (or it ended): nobody else joins it. */
  close(call: SharedCall): void {
    if (this.#open.get(call.key) === call) this.#open.delete(call.key)
  }

  /** open calls and the requests waiting on them, for /status */
  snapshot(): { calls: number; followers: number } {
    let followers = 0
    for (const call of this.#open.values()) followers += call.followers
    return { calls: this.#open.size, followers }
  }
}
