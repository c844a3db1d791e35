import type { MemoryBudget } from '../budget/budget.js'
import type { OutgoingHttpHeaders } from 'node:http'
import type { Registry } from 'prom-client'
import { ConfigError } from '../errors/config-error.js'
import type { ReusedAnswer } from './answer.js'
import { AnswerCache } from './cache.js'
import { Coalescer, type SharedCall } from './coalescer.js'
import { AppWaitsFullError, FollowersFullError } from './errors.js'
import { ReuseMetrics, type KeySavings } from './metrics.js'
import { Recorder } from './recorder.js'
import { notShareable, ReuseKeys, wantsFresh, type ReuseShape } from './request-key.js'
import type { CacheSettings, CoalesceSettings } from './settings.js'

export { writeReused, type ReusedAnswer, type StoredAnswer } from './answer.js'
export { cacheSettingsSchema, coalesceSettingsSchema, type CacheSettings, type CoalesceSettings } from './settings.js'
export type { KeySavings } from './metrics.js'
export { MAY_DIFFER } from './request-key.js'

/** A request as the reuse area sees it. */
export interface ReuseRequest extends ReuseShape {
  readonly endpointId: string
  /** when the request's wait must end (ms since epoch) */
  readonly deadline: number
  readonly hasBody: boolean
}

export interface ReuseDeps {
  readonly registry: Registry
  /** every endpoint id of the catalog: `cache.endpoints` must name some of them */
  readonly endpointIds: readonly string[]
  /** the metrics label of an endpoint id */
  readonly endpointLabel: (endpointId: string) => string
  /** most requests following identical calls per (instance, endpoint) on this replica (`queue.maxLength`) */
  readonly maxFollowers: number
  /** app identity is on (`apps.enabled`): requests of different apps never share (ReuseKeys) */
  readonly appsArePrincipals: boolean
  /** the memory budget the cache's answers count in (docs/deploy.md, "Memory: a budget"); none: unbounded but by `cache.maxBytes` */
  readonly budget?: MemoryBudget
  /** each app's `maxQueued` (`fairness.apps`): its followers count toward it; none: Infinity */
  readonly maxQueuedOf?: (app: string) => number
  /** whether that `maxQueued` is the app's share of `queue.maxLength` (`queue.maxShare`): the 503 names it */
  readonly queuedByShare?: (app: string) => boolean
  /** told once per process, when one call first gathers HEAVY_FOLLOWERS followers (docs/reuse.md) */
  readonly warn?: (fields: Record<string, unknown>, message: string) => void
}

/**
 * Followers of one call that make identical reads "heavy": a load test of one URL then measures
 * coalescing, not the API (docs/reuse.md, "Identical requests in a load test").
 */
export const HEAVY_FOLLOWERS = 20

/** How often followers of a call that gave up before answering try to share another (then each calls alone). */
const MAX_ROUNDS = 3

/** The reuse area's state for /status. */
export interface ReuseStatus {
  /** open calls, their followers, and the followers by app */
  readonly coalescing: { readonly calls: number; readonly followers: number; readonly apps: Record<string, number> }
  readonly cache: { readonly entries: number; readonly bytes: number } | null
  readonly permitsSaved: readonly KeySavings[]
}

/**
 * Answers that cost no permit: identical concurrent reads share one upstream call (coalescing), and
 * lookup lists may be served from a cache. README "Spending fewer permits" says what is shared when.
 */
export class Reuse {
  readonly #keys: ReuseKeys
  readonly #coalescer: Coalescer
  readonly #maxFollowers: number
  readonly #maxQueuedOf: (app: string) => number
  readonly #queuedByShare: (app: string) => boolean
  readonly #cache: AnswerCache | undefined
  readonly #metrics: ReuseMetrics
  #warn: ReuseDeps['warn']

  constructor(
    private readonly coalesce: CoalesceSettings,
    cache: CacheSettings,
    deps: ReuseDeps,
  ) {
    const known = new Set(deps.endpointIds)
    const unknown = cache.endpoints.filter((id) => !known.has(id))
    if (unknown.length > 0) {
      const problems = unknown.map(
        (id) =>
          `cache.endpoints (SLUICE_CACHE_ENDPOINTS): "${id}" is not an endpoint of the catalog (config/endpoints.yaml)`,
      )
      throw new ConfigError(`invalid settings:\n  - ${problems.join('\n  - ')}`, problems)
    }
    this.#warn = deps.warn
    this.#keys = new ReuseKeys(deps.appsArePrincipals)
    this.#maxFollowers = deps.maxFollowers
    this.#maxQueuedOf = deps.maxQueuedOf ?? (() => Infinity)
    this.#queuedByShare = deps.queuedByShare ?? (() => false)
    this.#coalescer = new Coalescer(deps.maxFollowers, deps.maxQueuedOf)
    this.#cache = cache.endpoints.length > 0 ? new AnswerCache(cache, deps.budget) : undefined
    this.#metrics = new ReuseMetrics(deps.registry, deps.endpointLabel, {
      evictions: () => this.#cache?.evictions ?? 0,
      entries: () => this.#cache?.entries ?? 0,
      bytes: () => this.#cache?.bytes ?? 0,
      waiting: () => this.#coalescer.snapshot().followers,
    })
  }

  /** The request's part in reuse, or undefined when it can have none (docs/reuse.md, "Requests that never share"). */
  open(request: ReuseRequest): ReuseTicket | undefined {
    if ((request.method !== 'GET' && request.method !== 'HEAD') || request.hasBody) return undefined
    const cached = this.#cache?.covers(request.endpointId) === true
    const fresh = wantsFresh(request.headers)
    // `queue.maxLength: 0` means no waiting at all, so no following either: each request calls for itself.
    const coalesce = this.coalesce.enabled && !fresh && this.#maxFollowers > 0
    if (!coalesce && !cached) return undefined
    return new ReuseTicket(this, this.#keys.keyOf(request), request, { coalesce, readCache: cached && !fresh, cached })
  }

  /** A request of `app` begins waiting for a permit on (instance, endpoint): its followers there may not fill its `maxQueued` meanwhile. */
  waitBegins(instance: string, endpointId: string, app: string): (() => void) | undefined {
    return this.#coalescer.waitBegins(`${instance}\n${endpointId}`, app)
  }

  /**
   * The count of `app`'s followers on (instance, endpoint), for the limiter to add to its waiters there
   * when one must wait (docs/reuse.md, "How many may follow"); undefined when the app has no `maxQueued`
   * or nothing follows: made once per request.
   */
  followersOf(instance: string, endpointId: string, app: string): (() => number) | undefined {
    if (!this.coalesce.enabled || this.#maxFollowers === 0) return undefined
    if (!Number.isFinite(this.#maxQueuedOf(app))) return undefined
    const group = `${instance}\n${endpointId}`
    return () => this.#coalescer.followersOf(group, app)
  }

  /** The bound an app's refused follower is told of. */
  boundOf(app: string): string {
    return this.#queuedByShare(app) ? 'share, queue.maxShare' : 'maxQueued'
  }

  /** A request follows a call that has `followers` now: the first heavy one is logged, once. */
  followed(followers: number, request: ReuseRequest): void {
    const warn = this.#warn
    if (followers < HEAVY_FOLLOWERS || warn === undefined) return
    this.#warn = undefined
    warn(
      { followers, app: request.app, endpoint: request.endpointId },
      'identical GETs are being coalesced heavily (one upstream call answers them all): a load test of one URL measures sluice, not the API; vary the query or set coalesce.enabled: false (logged once)',
    )
  }

  status(): ReuseStatus {
    const cache = this.#cache
    return {
      coalescing: this.#coalescer.snapshot(),
      cache: cache === undefined ? null : { entries: cache.entries, bytes: cache.bytes },
      permitsSaved: this.#metrics.byKey(),
    }
  }

  /** @internal for ReuseTicket */
  get parts(): { coalescer: Coalescer; cache: AnswerCache | undefined; metrics: ReuseMetrics; maxBytes: number } {
    return { coalescer: this.#coalescer, cache: this.#cache, metrics: this.#metrics, maxBytes: this.coalesce.maxBytes }
  }
}

interface TicketMode {
  readonly coalesce: boolean
  readonly readCache: boolean
  /** the endpoint is cached: a fresh 200 answer is kept, and answers say x-sluice-cache */
  readonly cached: boolean
}

/**
 * One request's part in reuse: `reused()` first; when it yields nothing, the request's own call is
 * reported through `head`, `chunk` and `end` (followers and the cache get a copy), then `close`.
 */
export class ReuseTicket {
  #call: SharedCall | undefined
  #recorder: Recorder | undefined
  #recording = false

  constructor(
    private readonly reuse: Reuse,
    private readonly key: string,
    private readonly request: ReuseRequest,
    private readonly mode: TicketMode,
  ) {}

  async reused(signal: () => AbortSignal): Promise<ReusedAnswer | undefined> {
    const { coalescer, cache, metrics } = this.reuse.parts
    const { endpointId, instance } = this.request
    if (this.mode.readCache && cache !== undefined) {
      const answer = cache.get(this.key)
      metrics.cacheLookup(endpointId, answer !== undefined)
      if (answer !== undefined) {
        metrics.saved(instance, endpointId, 'cache')
        return { kind: 'cache_hit', answer }
      }
    }
    this.#recording = this.mode.cached
    if (!this.mode.coalesce) return undefined
    for (let round = 0; round < MAX_ROUNDS; round++) {
      // Only a newcomer is refused at the bound: one whose call gave up already waited its turn.
      const { app } = this.request
      const joined = coalescer.join(this.key, this.request.deadline, `${instance}\n${endpointId}`, app, round === 0)
      const where = `${endpointId} (instance ${instance})`
      if ('full' in joined)
        throw joined.app === undefined
          ? new FollowersFullError(joined.full, where)
          : new AppWaitsFullError(joined.full, joined.app, where, this.reuse.boundOf(joined.app))
      if ('lead' in joined) {
        this.#call = joined.lead
        this.#recording = true
        return undefined
      }
      const call = joined.follow
      this.reuse.followed(call.followers, this.request)
      const result = await untilAborted(call.result, signal())
      coalescer.leave(call, app)
      if (result === undefined) return undefined // the client left; the proxy sees it gone
      if ('answer' in result) {
        metrics.saved(instance, endpointId, 'coalescing')
        return { kind: 'coalesced', answer: result.answer }
      }
      if (result.own === 'alone') break
    }
    // Not shared after all: an own call, which others may not join and which is kept only when cached.
    this.#recording = this.mode.cached
    return undefined
  }

  /** Headers that say where a reused answer came from: `Age` and `x-sluice-cache` for the cache. */
  answerHeaders(reused: ReusedAnswer): OutgoingHttpHeaders {
    if (reused.kind === 'cache_hit') {
      return {
        age: String(Math.max(0, Math.floor((Date.now() - reused.answer.storedAt) / 1000))),
        'x-sluice-cache': 'hit',
      }
    }
    return this.mode.cached ? { 'x-sluice-cache': 'miss' } : {}
  }

  /** The call's answer head (not an upstream 429): later identical requests make their own call. Returns headers to add. */
  head(status: number, headers: OutgoingHttpHeaders): OutgoingHttpHeaders | undefined {
    const { coalescer, maxBytes } = this.reuse.parts
    const call = this.#call
    if (call !== undefined) coalescer.close(call)
    // A copy is kept only for someone: requests that followed this call, or the cache; and never
    // of an answer that is one client's (it sets a cookie) or varies on what sharers may differ in.
    const wanted = (this.mode.cached || (call !== undefined && call.followers > 0)) && !notShareable(headers)
    this.#recorder = this.#recording && wanted ? Recorder.start(status, headers, maxBytes) : undefined
    if (this.#recorder === undefined) call?.settle({ own: 'alone' })
    return this.mode.cached ? { 'x-sluice-cache': 'miss' } : undefined
  }

  /** One chunk of the call's answer; true while a whole copy of the answer is kept. */
  chunk(chunk: Buffer): boolean {
    if (this.#recorder === undefined) return false
    if (this.#recorder.add(chunk)) return true
    this.#recorder = undefined
    this.#call?.settle({ own: 'alone' })
    return false
  }

  /** The call's answer ended: whole (`complete`) or broken off. */
  end(complete: boolean): void {
    const recorder = this.#recorder
    this.#recorder = undefined
    if (recorder === undefined) return
    if (!complete) return this.#call?.settle({ own: 'alone' })
    const answer = recorder.finish(Date.now())
    this.#call?.settle({ answer })
    const { cache } = this.reuse.parts
    if (this.mode.cached && cache !== undefined) cache.offer(this.key, answer)
  }

  /** The request is done: followers of a call that never got its answer try again without it. */
  close(): void {
    const call = this.#call
    if (call === undefined) return
    this.reuse.parts.coalescer.close(call)
    if (this.#recorder === undefined) call.settle({ own: 'retry' })
  }
}

/** The promise's value, or undefined as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined)
  return new Promise<T | undefined>((resolve) => {
    const onAbort = (): void => resolve(undefined)
    signal.addEventListener('abort', onAbort, { once: true })
    void promise.then((value) => {
      signal.removeEventListener('abort', onAbort)
      resolve(value)
    })
  })
}
