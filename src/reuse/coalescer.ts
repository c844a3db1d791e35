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

/** A follower's join refused: the (instance, endpoint)'s followers at `queue.maxLength`, or its app's waiting requests at its `maxQueued` (`app`). */
export type Joined =
  | { readonly lead: SharedCall }
  | { readonly follow: SharedCall; readonly app: string }
  | { readonly full: number; readonly app?: string }

/**
 * Calls that identical requests may join until their answer starts, with the followers of one
 * (instance, endpoint) bounded like a queue (docs/reuse.md, "How many may follow").
 */
export class Coalescer {
  readonly #open = new Map<string, SharedCall>()
  /** followers per (instance, endpoint) group; a group with none has no entry (an idle key costs nothing) */
  readonly #followers = new Map<string, number>()
  /** per group and app (`group\napp`): its followers, and its requests waiting for a permit when the app has a `maxQueued` */
  readonly #apps = new Map<string, { followers: number; waiting: number }>()

  constructor(
    private readonly maxFollowers: number,
    /** each app's `maxQueued` (Infinity: none): its followers and waiting requests on one key count against it together */
    private readonly maxQueuedOf: (app: string) => number = () => Infinity,
  ) {}

  /**
   * Follows the open call for `key`, or opens one this request leads; `bounded` false: a follower of a
   * call that gave up is not refused again. A follower counts toward its app's `maxQueued`, with the
   * app's requests waiting for a permit on the key (docs/reuse.md, "How many may follow").
   */
  join(key: string, deadline: number, group: string, app: string, bounded = true): Joined {
    const call = this.#open.get(key)
    // A follower waits as long as its leader does; one that must be answered sooner leads its own call.
    if (call !== undefined && call.deadline <= deadline) {
      const waiting = this.#followers.get(call.group) ?? 0
      if (bounded && waiting >= this.maxFollowers) return { full: waiting }
      const mine = this.#apps.get(`${call.group}\n${app}`)
      const queued = mine === undefined ? 0 : mine.followers + mine.waiting
      if (bounded && queued >= this.maxQueuedOf(app)) return { full: queued, app }
      this.#followers.set(call.group, waiting + 1)
      this.#count(`${call.group}\n${app}`, 1, 0)
      call.followers++
      return { follow: call, app }
    }
    const lead = new SharedCall(key, deadline, group)
    if (call === undefined) this.#open.set(key, lead)
    return { lead }
  }

  /** A follower of `call`, of `app`, is done waiting (answered, or its client left). */
  leave(call: SharedCall, app: string): void {
    call.followers--
    const waiting = (this.#followers.get(call.group) ?? 1) - 1
    if (waiting > 0) this.#followers.set(call.group, waiting)
    else this.#followers.delete(call.group)
    this.#count(`${call.group}\n${app}`, -1, 0)
  }

  /**
   * A request of `app` begins waiting for a permit on `group`, counted against the app's followers there;
   * undefined when the app has no `maxQueued` (nothing counted), else the function that ends it. It is
   * never refused here: a permit free now would serve it, and the limiter bounds its waiters and these
   * followers together by `maxQueued` (`followersOf`).
   */
  waitBegins(group: string, app: string): (() => void) | undefined {
    if (!Number.isFinite(this.maxQueuedOf(app))) return undefined
    const id = `${group}\n${app}`
    this.#count(id, 0, 1)
    return () => this.#count(id, 0, -1)
  }

  /** The app's followers on `group` now: the limiter counts them toward its `maxQueued` with its waiters. */
  followersOf(group: string, app: string): number {
    return this.#apps.get(`${group}\n${app}`)?.followers ?? 0
  }

  #count(id: string, followers: number, waiting: number): void {
    const mine = this.#apps.get(id) ?? { followers: 0, waiting: 0 }
    mine.followers += followers
    mine.waiting += waiting
    if (mine.followers <= 0 && mine.waiting <= 0) this.#apps.delete(id)
    else this.#apps.set(id, mine)
  }

  /** Each app's followers now, over every key (`/status`). */
  followersByApp(): Record<string, number> {
    const by: Record<string, number> = {}
    for (const [id, mine] of this.#apps)
      if (mine.followers > 0) {
        const app = id.slice(id.lastIndexOf('\n') + 1)
        by[app] = (by[app] ?? 0) + mine.followers
      }
    return by
  }

  /** The call's answer has started (or it ended): nobody else joins it. */
  close(call: SharedCall): void {
    if (this.#open.get(call.key) === call) this.#open.delete(call.key)
  }

  /** open calls and the requests waiting on them, in all and by app, for /status */
  snapshot(): { calls: number; followers: number; apps: Record<string, number> } {
    let followers = 0
    for (const waiting of this.#followers.values()) followers += waiting
    return { calls: this.#open.size, followers, apps: this.followersByApp() }
  }
}
