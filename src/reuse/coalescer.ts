import type { StoredAnswer } from './answer.js'

/**
 * How a shared call ended for its followers: its answer; `retry` when the leader gave up before the
 * API answered (they may share again); `alone` when the answer could not be shared (each calls alone).
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
    /** the (instance, endpoint) of the call: its followers count against that pair's bound */
    readonly group: string,
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

export type Joined = { readonly lead: SharedCall } | { readonly follow: SharedCall } | { readonly full: number }

/**
 * Calls that identical requests may join until their answer starts, with the followers of one
 * (instance, endpoint) bounded like a queue (docs/reuse.md, "How many may follow").
 */
export class Coalescer {
  readonly #open = new Map<string, SharedCall>()
  /** followers per (instance, endpoint) group; a group with none has no entry (an idle key costs nothing) */
  readonly #followers = new Map<string, number>()

  constructor(private readonly maxFollowers: number) {}

  /** Follows the open call for `key`, or opens one this request leads; `bounded` false: a follower of a call that gave up is not refused again. */
  join(key: string, deadline: number, group: string, bounded = true): Joined {
    const call = this.#open.get(key)
    // A follower waits as long as its leader does; one that must be answered sooner leads its own call.
    if (call !== undefined && call.deadline <= deadline) {
      const waiting = this.#followers.get(call.group) ?? 0
      if (bounded && waiting >= this.maxFollowers) return { full: waiting }
      this.#followers.set(call.group, waiting + 1)
      call.followers++
      return { follow: call }
    }
    const lead = new SharedCall(key, deadline, group)
    if (call === undefined) this.#open.set(key, lead)
    return { lead }
  }

  /** A follower of `call` is done waiting (answered, or its client left). */
  leave(call: SharedCall): void {
    call.followers--
    const waiting = (this.#followers.get(call.group) ?? 1) - 1
    if (waiting > 0) this.#followers.set(call.group, waiting)
    else this.#followers.delete(call.group)
  }

  /** The call's answer has started (or it ended): nobody else joins it. */
  close(call: SharedCall): void {
    if (this.#open.get(call.key) === call) this.#open.delete(call.key)
  }

  /** open calls and the requests waiting on them, for /status */
  snapshot(): { calls: number; followers: number } {
    let followers = 0
    for (const waiting of this.#followers.values()) followers += waiting
    return { calls: this.#open.size, followers }
  }
}
