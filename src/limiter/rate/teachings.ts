import type { IncomingHttpHeaders } from 'node:http'
import { BoundedMap } from '../../bounded/index.js'
import type { LimiterObserver, PermitKey, RateNews } from '../types.js'
import { hasRateFields, readRateEvidence, type RateEvidence } from './answer-fields.js'
import { learnedFrom429s, type RateEstimate } from './estimate.js'
import type { RateGate } from './gate.js'
import { gcraParams, HOLD_ONLY, stricter, type GcraParams, type Rate } from './gcra.js'

/** What answers may teach (docs/learned-limits.md, "Rates"). */
export interface RateLearning {
  /** read rates and holds from answers at all */
  readonly enabled: boolean
  /** a learned rate unused for this long is forgotten; a hold is never longer */
  readonly idleMs: number
  /** added to every window, configured or learned (`limits.rateMarginMs`) */
  readonly marginMs: number
}

/** A key's rate facts taught by answers, on this replica. */
export interface Taught {
  learned?: Rate
  learnedParams?: GcraParams
  /** `published`: the API's own fields said it; `learned`: found from its 429s (RateEstimate) */
  source?: 'published' | 'learned'
  /** while the key's 429s teach its rate (kept as long as the learned rate) */
  estimate?: RateEstimate
  learnedUntil: number
  heldUntil: number
}

/** A rate's GCRA constants, its window widened by the margin. */
export const withMargin = (rate: Rate, marginMs: number): GcraParams =>
  gcraParams(marginMs === 0 ? rate : { ...rate, windowMs: rate.windowMs + marginMs })

export const idOf = (key: PermitKey): string => `${key.instance}\0${key.endpoint}`

/**
 * The rates and holds upstream answers taught this replica, or another's through the gate
 * (docs/learned-limits.md, "Rates"), per key: what RatedLimiter makes stricter than a configured rate.
 */
export class RateTeachings {
  /** a key clients' traffic chooses, so bounded (10,000, the limiter's own bound) */
  readonly #taught = new BoundedMap<string, Taught>(10_000)

  constructor(
    private readonly gate: RateGate,
    private readonly learning: RateLearning,
    private readonly observer: LimiterObserver | undefined,
    private readonly now: () => number,
    /** this replica's requests waiting for a start of the key now (an estimate rises only while starts bind) */
    private readonly waiting: (id: string) => number,
  ) {}

  /** nothing taught on any key: the hot path skips every lookup */
  get none(): boolean {
    return this.#taught.size === 0
  }

  /**
   * The key's rule: `params` (a configured rate's, or none) made stricter by a learned rate; a hold
   * alone is HOLD_ONLY.
   */
  paramsOf(key: PermitKey, params: GcraParams | undefined): GcraParams | undefined {
    if (this.#taught.size === 0) return params
    const taught = this.#taught.get(idOf(key))
    if (taught === undefined) return params
    const now = this.now()
    if (taught.learnedUntil <= now && taught.heldUntil <= now) {
      this.#taught.delete(idOf(key))
      return params
    }
    if (taught.learnedParams !== undefined && taught.learnedUntil > now)
      params = params === undefined ? taught.learnedParams : stricter(params, taught.learnedParams)
    return taught.heldUntil > now ? (params ?? HOLD_ONLY) : params
  }

  get(id: string): Taught | undefined {
    return this.#taught.get(id)
  }

  /** Every key with something taught and not lapsed, by id; lapsed ones are forgotten on the way. */
  live(now: number): [string, Taught][] {
    const live: [string, Taught][] = []
    const forgotten: string[] = []
    for (const [id, taught] of this.#taught.entries()) {
      if (taught.learnedUntil <= now && taught.heldUntil <= now) forgotten.push(id)
      else live.push([id, taught])
    }
    for (const id of forgotten) this.#taught.delete(id)
    return live
  }

  /**
   * What an upstream answer says about the key's rate (docs/learned-limits.md, "Rates"): a published rate is
   * kept for `idleMs` and shared; a Retry-After on a throttled status, or a spent quota, holds every start.
   * Answers without these fields cost a few property reads. Returns true for a throttled answer that says
   * a quota per window is spent: the rate's 429, which learned concurrency limits do not count.
   */
  observeAnswer(
    key: PermitKey,
    status: number,
    headers: IncomingHttpHeaders,
    throttled: boolean,
    counted: boolean, // the request's start was taken from the gate (counted there already)
  ): boolean {
    if (!this.learning.enabled) return false
    // an accepted start of a key whose rate its 429s teach: one map lookup, once any key was taught
    if (!throttled && status < 500 && this.#taught.size > 0) this.#countAccepted(key)
    if (!hasRateFields(headers, throttled)) return false
    const now = this.now()
    // an HTTP-date Retry-After is read against the wall clock, the one it is written in
    const evidence = readRateEvidence(headers, throttled, Date.now())
    if (evidence.rate === undefined && evidence.holdMs === undefined) return false
    const id = idOf(key)
    const taught = this.#taught.get(id) ?? { learnedUntil: 0, heldUntil: 0 }
    if (evidence.rate !== undefined) this.#published(key, taught, evidence, now, !throttled && !counted)
    // a spent quota let through with a published log: counted in the log, not held to whole seconds
    const spentKnown =
      !throttled &&
      evidence.quotaSpent === true &&
      evidence.windowFromReset !== true &&
      taught.source === 'published' &&
      taught.learnedParams?.log !== undefined
    // a 429 with a Retry-After and nothing else: its rate is found from the starts accepted before it
    const found =
      throttled && evidence.rate === undefined && evidence.quotaSpent !== true && evidence.holdMs !== undefined
        ? this.#estimate(key, taught, evidence.holdMs, now)
        : false
    if (evidence.holdMs !== undefined && !spentKnown) {
      const holdMs = Math.min(evidence.holdMs, this.learning.idleMs)
      taught.heldUntil = Math.max(taught.heldUntil, now + holdMs)
      this.gate.hold(key, holdMs, taught.learnedParams ?? HOLD_ONLY)
      this.observer?.rateLearned?.(key, 'hold')
    }
    this.#taught.set(id, taught)
    return throttled && (evidence.quotaSpent === true || found)
  }

  /**
   * A rate the answer's own fields published. `X-RateLimit-*` tell no window, only the time to the reset:
   * the longest seen is kept. The API counted this answer's request: one the gate did not count (sent
   * before the rate was known, on any replica) is counted now, once; a spent quota counts the whole quota.
   */
  #published(key: PermitKey, taught: Taught, evidence: RateEvidence, now: number, uncounted: boolean): void {
    let rate = evidence.rate!
    const known = taught.source === 'published' ? taught.learned : undefined
    if (evidence.windowFromReset === true && known?.requests === rate.requests && known.windowMs >= rate.windowMs)
      rate = known
    const changed = known === undefined || known.requests !== rate.requests || known.windowMs !== rate.windowMs
    if (changed) this.#learnRate(key, taught, rate, 'published')
    else taught.learnedUntil = now + this.learning.idleMs
    const spent = evidence.quotaSpent === true ? rate.requests : 0
    const used = Math.max(spent, uncounted ? Math.min(evidence.used ?? 0, rate.requests) : 0) // "at least": idempotent
    if (uncounted || spent > 0) this.gate.sync(key, taught.learnedParams!, used, uncounted ? 1 : 0)
  }

  /** A rate in force for the key from now, shared with every replica; its constants. */
  #learnRate(key: PermitKey, taught: Taught, rate: Rate, source: 'published' | 'learned'): GcraParams {
    const params = withMargin(rate, this.learning.marginMs)
    taught.learned = rate
    taught.learnedParams = params
    taught.source = source
    taught.learnedUntil = this.now() + this.learning.idleMs
    this.gate.learn(key, params, this.learning.idleMs, rate, source)
    this.observer?.rateLearned?.(key, source === 'published' ? 'rate' : 'estimated', rate)
    return params
  }

  /**
   * A throttle with only a Retry-After: true once the key's rate is being learned from them (the 429 is the
   * rate's). With Redis, the accepted starts are every replica's, as Redis counted them: read first.
   */
  #estimate(key: PermitKey, taught: Taught, retryAfterMs: number, now: number): boolean {
    if (taught.source === 'published') return false
    const estimate = learnedFrom429s(taught, retryAfterMs, now, this.learning.idleMs)
    const found = estimate.rate !== undefined
    const apply = (shared?: number): void => {
      const rate = estimate.throttled(retryAfterMs, now, shared)
      if (rate !== undefined) this.#learnRate(key, taught, rate, 'learned')
    }
    const counted = this.gate.acceptedWithin?.(key, Math.max(estimate.windowMs, retryAfterMs))
    void (counted === undefined ? apply() : counted.then(apply))
    // with Redis, found after a round trip
    return found || estimate.rate !== undefined || (counted !== undefined && estimate.finds(now))
  }

  /**
   * Another replica's answer taught a hold or a rate (shared in Redis): this replica takes the key's starts
   * through the gate until it lapses, as if it had seen the answer (docs/redis-limiter.md, "Rates").
   */
  heard(news: RateNews): void {
    const now = this.now()
    const id = idOf(news.key)
    const taught = this.#taught.get(id) ?? { learnedUntil: 0, heldUntil: 0 }
    if (news.holdMs !== undefined) {
      taught.heldUntil = Math.max(taught.heldUntil, now + news.holdMs)
      // no rate published: it may be learned from 429s, and this replica's accepted starts count too, past
      // the hold's end as on the replica that drew it (the starts after the hold are the ones counted)
      if (taught.source !== 'published') learnedFrom429s(taught, news.holdMs, now, this.learning.idleMs)
    }
    if (news.rate !== undefined && news.ttlMs !== undefined) {
      // the last rate written applies to every replica, as in Redis (an estimate here goes on counting)
      taught.learned = news.rate
      taught.learnedParams = withMargin(news.rate, this.learning.marginMs)
      taught.source = news.source ?? 'learned'
      taught.learnedUntil = now + news.ttlMs
    }
    this.#taught.set(id, taught)
  }

  #countAccepted(key: PermitKey): void {
    const id = idOf(key)
    const taught = this.#taught.get(id)
    if (taught?.estimate === undefined) return
    this.gate.countAccepted?.(key, taught.estimate.windowMs)
    const raised = taught.estimate.accepted(this.now(), this.waiting(id) > 0)
    if (raised !== undefined) this.#learnRate(key, taught, raised, 'learned')
  }
}
