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
  RateStatus,
} from '../types.js'
import type { RateGate } from './gate.js'
import { HOLD_ONLY, type GcraParams, type Rate, type Reservation } from './gcra.js'
import { RatedPermit } from './rated-permit.js'
import { StartLines } from './start-line.js'
import { idOf, RateTeachings, withMargin, type RateLearning } from './teachings.js'
import { sleep, tooLong, turnOf } from './waits.js'

export type { RateLearning } from './teachings.js'

/** A start taken: its reservation, whether the rate made it wait, and when it was asked for (monotonic ms). */
interface Taken {
  readonly reservation: Reservation
  readonly waited: boolean
  readonly askedAt: number
}

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
  /** rates and holds answers taught */
  readonly #teachings: RateTeachings
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
    this.#teachings = new RateTeachings(gate, learning, observer, now, (id) => this.#lines.waiting(id))
    if (learning.enabled) inner.onRateNews?.((news) => this.#teachings.heard(news))
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
    if (this.#teachings.none) {
      const now = this.inner.acquireNow?.(key, options)
      if (now !== undefined) return Promise.resolve(now)
    }
    return this.inner
      .acquire(key, options)
      .then((permit) => (this.#teachings.none ? permit : this.#afterGrant(key, options, undefined, permit)))
  }

  /** The rule in force for a key: the configured rate, made stricter by a learned one; a hold alone is HOLD_ONLY. */
  #paramsOf(key: PermitKey, rate: Rate | undefined): GcraParams | undefined {
    return this.#teachings.paramsOf(key, rate === undefined ? undefined : this.#paramsFor(rate))
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

  /** What an upstream answer says about the key's rate: RateTeachings.observeAnswer. */
  observeAnswer(
    key: PermitKey,
    status: number,
    headers: IncomingHttpHeaders,
    throttled: boolean,
    counted = false, // the request's start was taken from the gate (counted there already)
  ): boolean {
    return this.#teachings.observeAnswer(key, status, headers, throttled, counted)
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
    for (const [id] of this.#teachings.live(now)) {
      if (seen.has(id)) continue
      const [instance = '', endpoint = ''] = id.split('\0')
      rates.push(this.#rateStatus({ instance, endpoint }, undefined, now))
    }
    return rates.length === 0 ? status : { ...status, rates }
  }

  #rateStatus(key: PermitKey, rate: Rate | undefined, now: number): RateStatus {
    const taught = this.#teachings.get(idOf(key))
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
