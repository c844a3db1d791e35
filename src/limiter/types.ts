/**
 * The one limiter interface. The proxy holds a `Limiter` and never knows which backend it has:
 * the in-process one (a single replica) or the Redis one (permits shared by every replica).
 */

import type { Rate } from './rate/gcra.js'

export type { Rate } from './rate/gcra.js'

/** Which way permits are being decided right now. */
export type LimiterMode =
  /** in-process backend, the embedded default (no Redis configured) */
  | 'memory'
  /** Redis backend, permits shared by every replica */
  | 'redis'
  /** Redis unreachable: each replica limits alone at its share; the shares of the replicas alive add up to the limit */
  | 'local'
  /** Redis unreachable: forward without limits */
  | 'open'
  /** Redis unreachable: refuse with 503 + Retry-After */
  | 'closed'

/** What one semaphore is: an (instance, endpoint) pair and its limit. */
export interface PermitKey {
  /** the organisation (Basic-auth username, never the API key) */
  readonly instance: string
  /** the endpoint id, `METHOD /path/template`, e.g. `POST /accounts/search` */
  readonly endpoint: string
}

/**
 * A key whose limit is learned from the API's answers (README "Learned limits"): `AcquireOptions.limit`
 * is where learning starts, `ceiling` and `floor` bound it, and a value unused for `idleMs` is forgotten.
 */
export interface LearnOptions {
  readonly ceiling: number
  readonly floor: number
  readonly idleMs: number
}

/** What the API said about a permit's request (the ground of learned limits): `throttled` a 429, `success` neither a 429 nor a 5xx, `neutral` no word. */
export type PermitOutcome = 'success' | 'throttled' | 'neutral'

export interface AcquireOptions {
  /** how many requests may be in progress at once for this key (where learning starts, when `learn` is set) */
  readonly limit: number
  /** the key's limit is learned (README "Learned limits"); absent: `limit` is fixed */
  readonly learn?: LearnOptions
  /** absolute time (ms since epoch, `Date.now()` clock) after which the wait fails with QueueTimeoutError */
  readonly deadline: number
  /** Aborts the wait (client hung up). The in-process backend reads it only if the request must wait, so it may be a lazy getter. */
  readonly signal?: AbortSignal
  /** When the request first joined a queue (ms since epoch); passed again after an upstream 429 so it re-enters near the head. */
  readonly arrivedAt?: number
  /** the longest queue allowed for this key; past it acquire rejects with QueueFullError */
  readonly maxQueue: number
  /** The calling app, resolved once per request (README "Apps: identity, access and keys"): the ground for fair share between apps. */
  readonly app?: string
  /**
   * Told once by a forecasting limiter (src/forecast) before the wait, refused or not: requests of this
   * replica ahead in the key's queue, and the predicted wait in ms when known (the request's trace reads it).
   */
  onForecast?(ahead: number, expectedMs: number | undefined): void
  /** the key's rate, N per window (docs/redis-limiter.md, "Rates"); absent: none configured */
  readonly rate?: Rate
  /**
   * The app's requests following identical calls on this key now (docs/reuse.md, "How many may follow"):
   * they count toward its `maxQueued` with its waiters. Asked only when the request must wait.
   */
  readonly followers?: () => number
}

export interface Permit {
  /** Gives the permit back, with what the API answered (learned limits read it). Idempotent, never throws, never rejects. */
  release(outcome?: PermitOutcome): void
  /** Aborted when the backend knows the permit no longer holds (a Redis lease lost in a stall); the request goes on, never re-acquired silently. */
  readonly lost: AbortSignal
  /** true once `lost` has aborted; cheap to read (reading `lost` makes a signal) */
  readonly isLost: boolean
  /** ms spent waiting in the queue before the grant */
  readonly waitedMs: number
  /**
   * True when a request may start on this permit now; false: give it back and wait again at its place
   * (docs/redis-limiter.md, "Leases"). Asked at the last moment before sending. No round trip.
   */
  canStart(): boolean
  /**
   * The request is being written upstream: called once, right after the last `canStart()` said true, so a
   * permit Redis forgot is counted again only if sent (docs/redis-limiter.md, "Failure modes"). No round trip.
   */
  markSent(): void
  /** true: the request's start was taken from a rate gate, which counts it already (docs/learned-limits.md, "Rates") */
  readonly startCounted?: boolean
}

/** One app's share of a key, as `/status` shows it (README "Fair share between apps"). */
export interface AppShare {
  readonly app: string
  /** permits the app holds on the key (for the Redis backend, across every replica) */
  readonly held: number
  /** the app's waiters queued on the key (for the Redis backend, across every replica) */
  readonly queued: number
}

/** One active key, as `/status` shows it. */
export interface KeyStatus {
  readonly instance: string
  readonly endpoint: string
  /** the limit in force (a learned one when `learned` is present) */
  readonly limit: number
  /** present when the limit is learned: the learned value (a real number; its whole part is `limit`) and its ceiling */
  readonly learned?: { readonly value: number; readonly ceiling: number }
  /** permits held (upstream requests in progress) — for the Redis backend, across every replica */
  readonly inFlight: number
  /** waiters queued — for the Redis backend, across every replica */
  readonly queued: number
  /** age in ms of the oldest waiter, 0 when none */
  readonly oldestWaitMs: number
  /** each app's share, apps with nothing held or queued left out; absent when the backend cannot tell */
  readonly apps?: readonly AppShare[]
  /** Redis: who holds its permits — replica, app, and the age in ms of the request holding each (from its arrival) */
  readonly holders?: readonly { readonly replica: string; readonly app: string; readonly ageMs: number }[]
  /** Redis: waiters, and no grant for longer than a lease (docs/redis-limiter.md, "Status and metrics"): for how long, ms */
  readonly stuckMs?: number
}

/** A key's rate, as `/status` lists it. */
export interface RateStatus {
  readonly instance: string
  readonly endpoint: string
  /**
   * where the rate in force comes from: `configured` (catalog, `limits.rates`), `published` (the API's
   * RateLimit / X-RateLimit fields) or `learned` (found from its 429s and Retry-After, or a hold alone)
   */
  readonly source: 'configured' | 'published' | 'learned'
  /** the configured rate, if any */
  readonly rate?: Rate
  /** a rate learned from the API's answers, if any, and for how much longer it holds */
  readonly learned?: Rate & { readonly expiresInMs: number }
  /** ms until the next start free, as this replica last saw it */
  readonly nextStartMs: number
}

/** A learned limit, as `/status` lists it (README "Learned limits"). */
export interface LearnedLimitStatus {
  readonly instance: string
  readonly endpoint: string
  /** the whole number of permits in force */
  readonly limit: number
  /** the learned value (a real number) */
  readonly value: number
  readonly ceiling: number
}

export interface LimiterStatus {
  readonly backend: 'memory' | 'redis'
  readonly mode: LimiterMode
  readonly keys: readonly KeyStatus[]
  /**
   * Learned limits the backend knows: in process, every one not yet forgotten; with Redis, those of
   * the keys some replica had busy within the last lease (1 000 at most: docs/redis-limiter.md, "Status and metrics")
   */
  readonly learned?: readonly LearnedLimitStatus[]
  /** keys with a rate this replica used lately (docs/redis-limiter.md, "Rates") */
  readonly rates?: readonly RateStatus[]
  /** extra, backend-specific facts (replica count, redis state) */
  readonly details?: Record<string, unknown>
}

export interface Limiter {
  readonly backend: 'memory' | 'redis'
  /** the mode in force now; changes with Redis health for the Redis backend */
  mode(): LimiterMode
  /**
   * Waits for a permit for `key`, first come first served.
   * Rejects with QueueFullError, QueueTimeoutError, LimiterClosedError (mode `closed`, or shut down)
   * or the signal's AbortError.
   */
  acquire(key: PermitKey, options: AcquireOptions): Promise<Permit>
  /**
   * A permit when one is free now and nobody waits ahead, with no promise; undefined: call `acquire`.
   * Optional (the in-process backend has it): the rate limiter's path for a key with no rate.
   */
  acquireNow?(key: PermitKey, options: AcquireOptions): Permit | undefined
  /** a snapshot of every active key */
  status(): Promise<LimiterStatus>
  /** the limit in force for a key now (a learned one as last known), without a round trip; cheap */
  limitOf?(key: PermitKey, options: Pick<AcquireOptions, 'limit' | 'learn'>): number
  /** true until it shuts down (used by /readyz); a mode that refuses (`closed`) is still ready: it answers */
  ready(): boolean
  /** Rejects every waiter with LimiterClosedError; keeps held permits releasable. */
  drain(): void
  /** Stops timers and connections. */
  close(): Promise<void>
  /** what another replica's answers taught of a key's rate, shared through the backend (none in process) */
  onRateNews?(listener: (news: RateNews) => void): void
}

/**
 * A hold or a rate one replica's answers taught, told to every replica (docs/redis-limiter.md, "Rates"):
 * a replica hearing it takes the key's starts through the gate until it lapses.
 */
export interface RateNews {
  readonly key: PermitKey
  /** a hold (Retry-After, a spent quota) of this long from now */
  readonly holdMs?: number
  /** a rate learned for `ttlMs` from now, and where it came from */
  readonly rate?: Rate
  readonly source?: 'published' | 'learned'
  readonly ttlMs?: number
}

/** Hooks through which a backend reports what metrics need; every one optional and cheap. */
export interface LimiterObserver {
  /** the mode in force changed (e.g. redis → local when Redis went away) */
  modeChanged?(mode: LimiterMode): void
  /** one Redis command or script finished */
  redisCommand?(operation: string, seconds: number, ok: boolean): void
  /** a held permit's lease was lost (see Permit.lost) */
  leaseLost?(key: PermitKey): void
  /** a learned limit changed its whole number of permits (reported once, by the replica whose release changed it) */
  limitChanged?(key: PermitKey, change: LimitChange): void
  /** a request waited this long for its start under a rate, after its permit (docs/redis-limiter.md, "Rates") */
  rateWaited?(key: PermitKey, seconds: number): void
  /**
   * an answer taught a key's rate: a published rate, one `estimated` from 429s and Retry-After (with the
   * rate now in force), or a hold (Retry-After, a spent quota)
   */
  rateLearned?(key: PermitKey, what: 'rate' | 'estimated' | 'hold', rate?: Rate): void
}

/** A learned limit that went up or down, and why (the log line and the counter of changes). */
export interface LimitChange {
  readonly from: number
  readonly to: number
  /** the learned value after the change (a real number) */
  readonly value: number
  /** `throttled`: an upstream 429 with `held` permits out; `saturated`: successes while every permit was in use */
  readonly reason: 'throttled' | 'saturated'
  readonly held: number
}
