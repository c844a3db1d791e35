import type { IncomingHttpHeaders } from 'node:http'
import { performance } from 'node:perf_hooks'
import { BoundedMap } from '../../bounded/index.js'
import { LimiterClosedError } from '../errors.js'
import type {
  AcquireOptions,
  Limiter,
  LimiterMode,
  LimiterObserver,
  LimiterStatus,
  Permit,
  PermitKey,
  RateNews,
  RateStatus,
} from '../types.js'
import { hasRateFields, readRateEvidence, type RateEvidence } from './answer-fields.js'
import type { RateGate } from './gate.js'
import { gcraParams, HOLD_ONLY, stricter, type GcraParams, type Rate, type Reservation } from './gcra.js'
import { RateEstimate } from './estimate.js'
import { RatedPermit } from './rated-permit.js'
import { StartLines } from './start-line.js'
import { sleep, tooLong, turnOf } from './waits.js'

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
interface Taught {
  learned?: Rate
  learnedParams?: GcraParams
  /** `published`: the API's own fields said it; `learned`: found from its 429s (RateEstimate) */
  source?: 'published' | 'learned'
  /** while the key's 429s teach its rate (kept as long as the learned rate) */
  estimate?: RateEstimate
  learnedUntil: number
  heldUntil: number
}

/** A start taken: its reservation, whether the rate made it wait, and when it was asked for (monotonic ms). */
interface Taken {
  readonly reservation: Reservation
  readonly waited: boolean
  readonly askedAt: number
}

/** A rate's GCRA constants, its window widened by the margin. */
const withMargin = (rate: Rate, marginMs: number): GcraParams =>
  gcraParams(marginMs === 0 ? rate : { ...rate, windowMs: rate.windowMs + marginMs })

const idOf = (key: PermitKey): string => `${key.instance}\0${key.endpoint}`

/** The least time a taken start may take to be sent, whatever the margin (a send takes a few ms of the event loop). */
const MIN_SEND_SLACK_MS = 20

/**
 * Rates beside the concurrency limit (docs/redis-limiter.md, "Rates"): a request first gets its permit in
 * the fair queue, then takes its start from the rate gate in grant order — only when a start is free now,
 * so a start is spent by a request about to be sent, never reserved ahead for one that may leave — and is
 * sent at once. A start past the deadline is refused at once (503 SLUICE_WAIT_TOO_LONG) and takes nothing.
 * A key with no rate configured, learned or held goes straight to the backend: one property read.
 */
export class RatedLimiter implements Limiter {
  /** taught rates and holds: a key clients' traffic chooses, so bounded (10,000, the limiter's own bound) */
  readonly #taught = new BoundedMap<string, Taught>(10_000)
  /** configured rates used lately, for `/status` (same bound) */
  readonly #used = new BoundedMap<string, { key: PermitKey; rate: Rate; at: number }>(10_000)
  /** aborted by drain(): requests waiting for their start are not in flight yet, so they get the 503 the queued get */
  readonly #drained = new AbortController()
  /** configured rates are frozen catalog objects: their constants once each */
  readonly #params = new WeakMap<Rate, GcraParams>()
  /** this replica's requests waiting for a start, per key, in grant order */
  readonly #lines = new StartLines()
  readonly #slackMs: number

  constructor(
    private readonly inner: Limiter,
    private readonly gate: RateGate,
    private readonly learning: RateLearning,
    private readonly observer: LimiterObserver | undefined,
    /** monotonic: a wall-clock step changes no rate, hold or expiry (docs/redis-limiter.md, "Rates") */
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#slackMs = Math.max(MIN_SEND_SLACK_MS, learning.marginMs)
    if (learning.enabled) inner.onRateNews?.((news) => this.#heard(news))
  }

  get backend(): 'memory' | 'redis' {
    return this.inner.backend
  }

  mode(): LimiterMode {
    return this.inner.mode()
  }

  acquire(key: PermitKey, options: AcquireOptions): Promise<Permit> {
    const rate = options.rate
    if (rate !== undefined) {
      this.#used.set(idOf(key), { key, rate, at: this.now() })
      return this.inner.acquire(key, options).then((permit) => this.#afterGrant(key, options, rate, permit))
    }
    // The rule is read at the grant: a hold or rate taught while the request queued applies to it
    // (docs/redis-limiter.md, "Rates"). Until anything is taught, a permit free now (in process) comes
    // as the backend gives it, with no promise step of ours.
    if (this.#taught.size === 0) {
      const now = this.inner.acquireNow?.(key, options)
      if (now !== undefined) return Promise.resolve(now)
    }
    return this.inner
      .acquire(key, options)
      .then((permit) => (this.#taught.size === 0 ? permit : this.#afterGrant(key, options, undefined, permit)))
  }

  /** The rule in force for a key: the configured rate, made stricter by a learned one; a hold alone is HOLD_ONLY. */
  #paramsOf(key: PermitKey, rate: Rate | undefined): GcraParams | undefined {
    let params = rate === undefined ? undefined : this.#paramsFor(rate)
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

  #paramsFor(rate: Rate): GcraParams {
    let p = this.#params.get(rate)
    if (p === undefined) this.#params.set(rate, (p = withMargin(rate, this.learning.marginMs)))
    return p
  }

  async #afterGrant(key: PermitKey, options: AcquireOptions, rate: Rate | undefined, permit: Permit): Promise<Permit> {
    const params = this.#paramsOf(key, rate)
    if (params === undefined) return permit
    const began = performance.now()
    let taken: Taken
    try {
      if (this.#drained.signal.aborted) throw this.#drained.signal.reason as Error
      taken = await this.#takeStart(key, options, params)
    } catch (err) {
      // the permit was never used: back at once, saying nothing about the limit
      permit.release('neutral')
      throw err
    }
    // the slack before the send counts from the ask: a slow reply from Redis is part of it
    const at = taken.askedAt
    this.observer?.rateWaited?.(key, (performance.now() - began) / 1000)
    const id = idOf(key)
    const tat = taken.reservation.tat
    return new RatedPermit(permit, {
      at,
      slackMs: this.#slackMs,
      waited: taken.waited,
      signal: options.signal,
      giveBack: () => (tat === undefined ? undefined : this.gate.giveBack(key, params, tat)),
      rateBinds: () => this.#lines.waiting(id) > 0,
    })
  }

  /**
   * In line behind this replica's earlier grants, then a start taken when one is free: asked again after
   * every wait, so a timer that fired late (a stalled event loop) takes its start at the time it runs,
   * never bunched with the others that fired late.
   */
  async #takeStart(key: PermitKey, options: AcquireOptions, params: GcraParams): Promise<Taken> {
    if (options.signal?.aborted === true) throw options.signal.reason as Error
    const place = this.#lines.join(idOf(key))
    let waited = place.ahead > 0
    let asked = false
    try {
      if (waited) {
        const predicted = this.gate.nextFreeMs(key, params) + place.ahead * params.intervalMs
        const maxWaitMs = options.deadline - Date.now()
        if (predicted > maxWaitMs) throw tooLong(key, predicted, maxWaitMs)
        await turnOf(place.turn, maxWaitMs, options.signal, this.#drained.signal, key)
      }
      for (;;) {
        const maxWaitMs = options.deadline - Date.now()
        const askedAt = performance.now()
        const reservation = await this.gate.reserve(key, params, 0, place.id)
        if (reservation.granted) return { reservation, waited, askedAt }
        waited = asked = true // and in the gate's order of waiters until it takes a start or leaves
        if (reservation.delayMs > maxWaitMs) throw tooLong(key, reservation.delayMs, maxWaitMs)
        await sleep(reservation.delayMs, options.signal, this.#drained.signal)
      }
    } catch (err) {
      if (asked) this.gate.leave?.(key, place.id)
      throw err
    } finally {
      place.leave()
    }
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
    counted = false, // the request's start was taken from the gate (counted there already)
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
    const estimate = (taught.estimate ??= new RateEstimate(retryAfterMs, now))
    taught.learnedUntil = Math.max(taught.learnedUntil, now + this.learning.idleMs)
    const found = estimate.rate !== undefined
    const apply = (shared?: number): void => {
      const rate = estimate.throttled(retryAfterMs, now, shared)
      if (rate !== undefined) this.#learnRate(key, taught, rate, 'learned')
    }
    const counted = this.gate.acceptedWithin?.(key, Math.max(estimate.windowMs, retryAfterMs))
    void (counted === undefined ? apply() : counted.then(apply))
    return found || estimate.rate !== undefined || (counted !== undefined && estimate.finds(now)) // Redis: found after a round trip
  }

  /**
   * Another replica's answer taught a hold or a rate (shared in Redis): this replica takes the key's starts
   * through the gate until it lapses, as if it had seen the answer (docs/redis-limiter.md, "Rates").
   */
  #heard(news: RateNews): void {
    const now = this.now()
    const id = idOf(news.key)
    const taught = this.#taught.get(id) ?? { learnedUntil: 0, heldUntil: 0 }
    if (news.holdMs !== undefined) {
      taught.heldUntil = Math.max(taught.heldUntil, now + news.holdMs)
      // no rate published: it may be learned from 429s, and this replica's accepted starts count too
      if (taught.source !== 'published') taught.estimate ??= new RateEstimate(news.holdMs, now)
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
    const raised = taught.estimate.accepted(this.now(), this.#lines.waiting(id) > 0)
    if (raised !== undefined) this.#learnRate(key, taught, raised, 'learned')
  }

  async status(): Promise<LimiterStatus> {
    const status = await this.inner.status()
    const now = this.now()
    const rates: RateStatus[] = []
    const seen = new Set<string>()
    const stale: string[] = [] // configured rates used within the last minute, then whatever answers taught
    for (const [id, used] of this.#used.entries()) {
      if (now - used.at > 60_000) {
        stale.push(id)
        continue
      }
      seen.add(id)
      rates.push(this.#rateStatus(used.key, used.rate, now))
    }
    // what is no longer shown is dropped, so /status and memory follow the keys in use (docs/redis-limiter.md, "Rates", cost)
    for (const id of stale) this.#used.delete(id)
    const forgotten: string[] = []
    for (const [id, taught] of this.#taught.entries()) {
      if (taught.learnedUntil <= now && taught.heldUntil <= now) {
        forgotten.push(id)
        continue
      }
      if (seen.has(id)) continue
      const [instance = '', endpoint = ''] = id.split('\0')
      rates.push(this.#rateStatus({ instance, endpoint }, undefined, now))
    }
    for (const id of forgotten) this.#taught.delete(id)
    return rates.length === 0 ? status : { ...status, rates }
  }

  #rateStatus(key: PermitKey, rate: Rate | undefined, now: number): RateStatus {
    const taught = this.#taught.get(idOf(key))
    const learned =
      taught?.learned !== undefined && taught.learnedUntil > now
        ? { ...taught.learned, expiresInMs: taught.learnedUntil - now }
        : undefined
    const params = this.#paramsOf(key, rate) ?? HOLD_ONLY
    // where the rate in force comes from: a configured one, unless an answer taught a stricter one
    const configured = rate === undefined ? undefined : this.#paramsFor(rate)
    const taughtWins =
      learned !== undefined && (configured === undefined || taught!.learnedParams!.intervalMs > configured.intervalMs)
    const source = taughtWins ? taught!.source! : configured !== undefined ? 'configured' : 'learned'
    return {
      instance: key.instance,
      endpoint: key.endpoint,
      source,
      ...(rate === undefined ? {} : { rate }),
      ...(learned === undefined ? {} : { learned }),
      nextStartMs: this.gate.nextFreeMs(key, params),
    }
  }

  limitOf(key: PermitKey, options: Pick<AcquireOptions, 'limit' | 'learn'>): number {
    return this.inner.limitOf?.(key, options) ?? options.limit
  }

  ready(): boolean {
    return this.inner.ready()
  }

  drain(): void {
    if (!this.#drained.signal.aborted) this.#drained.abort(new LimiterClosedError('sluice is shutting down'))
    this.inner.drain()
  }

  async close(): Promise<void> {
    this.drain()
    this.gate.close()
    await this.inner.close()
  }
}
