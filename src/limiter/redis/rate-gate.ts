import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { MemoryRateGate, type RateGate } from '../rate/gate.js'
import { HOLD_ONLY, shareOf, type GcraParams, type Rate, type Reservation } from '../rate/gcra.js'
import type { LimiterMode, PermitKey, RateNews } from '../types.js'
import { BoundedMap } from '../../bounded/index.js'
import { tagOf } from './keys.js'
import {
  acceptedWithin,
  countAccepted,
  giveStartBack,
  holdStarts,
  leaveStarts,
  rateEpoch,
  reserveStart,
  shareLearnedRate,
  syncStarts,
  type News,
  type RedisReservation,
} from './rate/index.js'
import { encodeRateNews, rateNewsChannel } from './rate/news.js'
import type { ScriptRunner } from './script.js'

/** What the gate needs of the Redis limiter beside it: its scripts, its mode, how many replicas share. */
export interface RateGateHost {
  readonly scripts: ScriptRunner
  readonly keyPrefix: string
  mode(): LimiterMode
  replicas(): number
  /**
   * This replica's share of `n` starts per window in the `local` fallback: the concurrency fallback's rule
   * (local-share.ts), so the replicas' shares add up to `n`; without it, ⌊n / replicas⌋
   */
  shareOf?(key: PermitKey, n: number): number
  /** how long after a fallback ends reservations stay at this replica's share: until every replica has seen Redis back */
  readonly settleMs: number
}

const GRANTED_NOW: Reservation = Object.freeze({ delayMs: 0, granted: true })

/**
 * Start times reserved in Redis for every replica (the `rate` script, Redis's clock). While Redis is
 * unreachable (mode `local`) each replica reserves in process at its share of the rate (shareOf); mode
 * `open` reserves nothing. A reservation whose script fails is made locally at that share instead.
 */
export class RedisRateGate implements RateGate {
  readonly #local: MemoryRateGate
  /** the Redis key of each (instance, endpoint) seen lately: a SHA-1 each, so kept (10,000 keys: the limiter's own bound) */
  readonly #keys = new BoundedMap<string, string>(10_000)
  /** the next free start as the last reservation here saw it (ms on this replica's monotonic clock), for `/status` */
  readonly #nextFree = new BoundedMap<string, number>(10_000)
  /** when this replica last took a start of each key through Redis (monotonic ms): a key missing within a window of it was lost */
  readonly #lastTaken = new BoundedMap<string, number>(10_000)
  /** when this replica last left a fallback (ms, its monotonic clock); Infinity while in one */
  #fallbackEndedAt = -Infinity
  /** when the fallback in force began (ms, its monotonic clock) */
  #fallbackBeganAt = -Infinity
  /** how many replicas shared Redis when the last fallback began */
  #replicasBefore = 1
  /** keys whose local starts were put after what Redis last said, since the fallback began */
  readonly #seeded = new BoundedMap<string, true>(10_000)

  /** the prefix's rate epoch as this replica last read it: another one (or none) means Redis lost its data since */
  #epoch: string | undefined

  constructor(
    private readonly host: RateGateHost,
    private readonly log: { warn(obj: object, msg: string): void },
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#local = new MemoryRateGate(now)
    // read at once, so a loss before this replica's first start of a key is seen (docs/redis-limiter.md, "Rates")
    if (host.mode() === 'redis') void this.#lostSince(0, 'fresh')
  }

  /**
   * Whether Redis lost its data within `windowMs`: the epoch is another than the one this replica read
   * (a new id is written each time one is found missing), or one made for a loss less than a window ago
   * (so every key missing in that window is held, and a replica that started after the loss knows it).
   */
  async #lostSince(windowMs: number, kind: 'fresh' | 'lost'): Promise<boolean> {
    try {
      const key = `${this.host.keyPrefix}:{global}:rate-epoch`
      const epoch = await rateEpoch(this.host.scripts, key, randomBytes(8).toString('hex'), kind)
      const changed = this.#epoch !== undefined && epoch.id !== this.#epoch
      this.#epoch = epoch.id
      return changed || (epoch.kind === 'lost' && epoch.ageMs < windowMs)
    } catch {
      // not known: a missing key is taken as lost, a window held (never one more start)
      return true
    }
  }

  /** The key is missing and this replica never started on it: new, or lost with Redis's data (then held a window). */
  async #reserveMissing(
    key: PermitKey,
    share: GcraParams,
    maxWaitMs: number,
    waiter: string,
  ): Promise<RedisReservation> {
    const lost = await this.#lostSince(share.windowMs, 'lost')
    return reserveStart(
      this.host.scripts,
      this.#redisKey(key),
      share,
      maxWaitMs,
      lost ? share.windowMs : 0,
      false,
      waiter,
    )
  }

  /** news for every replica's subscriber (docs/redis-limiter.md, "Rates"): those that never used the key hear of it */
  #news(news: RateNews): News {
    return { channel: rateNewsChannel(this.host.keyPrefix), message: encodeRateNews(news) }
  }

  #redisKey(key: PermitKey): string {
    return this.#keys.getOrMake(`${key.instance}\0${key.endpoint}`, () => `${this.host.keyPrefix}:{${tagOf(key)}}:rate`)
  }

  reserve(key: PermitKey, params: GcraParams, maxWaitMs: number, waiter = ''): Reservation | Promise<Reservation> {
    const mode = this.host.mode()
    if (mode === 'open') return GRANTED_NOW
    if (mode !== 'redis') return this.#reserveLocally(key, params, maxWaitMs)
    if (this.#seeded.size > 0) this.#seeded.clear()
    const id = `${key.instance}\0${key.endpoint}`
    // Right after a fallback, other replicas may still reserve locally at their share: this one keeps to
    // its share too, through Redis, until they have all seen Redis back (docs/redis-limiter.md, "Rates").
    const share = this.now() < this.#fallbackEndedAt + this.host.settleMs ? this.#shareOf(key, params) : params
    if (share.spaced === 0) return this.#noShare(params, maxWaitMs)
    // Back from a fallback: starts this replica reserved meanwhile are still ahead; Redis holds its
    // next start a window past them (docs/redis-limiter.md, "Rates", "Redis lost and back").
    const localAhead = this.#local.size > 0 ? this.#local.nextFreeMs(key, share) : 0
    const sent =
      localAhead > 0
        ? holdStarts(this.host.scripts, this.#redisKey(key), localAhead + share.intervalMs, share).then(() =>
            this.#forgetLocal(key),
          )
        : Promise.resolve()
    // Taken less than a window ago here: a key Redis no longer has was lost, and holds for a window.
    const taken = this.#lastTaken.get(id)
    const lostMs = taken !== undefined && this.now() - taken < share.windowMs ? share.windowMs : 0
    return sent
      .then(() =>
        reserveStart(this.host.scripts, this.#redisKey(key), share, maxWaitMs, lostMs, taken === undefined, waiter),
      )
      .then((r) => (r.missing === true ? this.#reserveMissing(key, share, maxWaitMs, waiter) : r))
      .then(
        (r) => {
          const now = this.now()
          this.#nextFree.set(id, now + r.nextFreeMs)
          if (r.granted) this.#lastTaken.set(id, now)
          return r
        },
        (err: unknown) => {
          this.log.warn(
            { err, instance: key.instance, endpoint: key.endpoint },
            "limiter: the rate script failed; this start reserved in process at this replica's share of the rate",
          )
          return this.#reserveLocally(key, params, maxWaitMs)
        },
      )
  }

  /**
   * At this replica's share of the rate. A key's first local start waits one window past the fallback's
   * beginning: the starts any replica took through Redis before it may fill that window, whether or not
   * this replica used the key (docs/redis-limiter.md, "Rates"). Reservations made here are local: not given back to
   * Redis.
   */
  #reserveLocally(key: PermitKey, params: GcraParams, maxWaitMs: number): Reservation {
    const id = `${key.instance}\0${key.endpoint}`
    const share = this.#shareOf(key, params)
    if (share.spaced === 0) return this.#noShare(params, maxWaitMs)
    if (!this.#seeded.has(id)) {
      this.#seeded.set(id, true)
      const now = this.now()
      const seen = this.#nextFree.get(id) ?? -Infinity
      const until = Math.max(this.#fallbackBeganAt + params.windowMs, seen + params.windowMs)
      if (until > now) this.#local.hold(key, until - now, share)
    }
    const r = this.#local.reserve(key, share, maxWaitMs)
    return r.tat === undefined ? r : { delayMs: r.delayMs, granted: r.granted, tat: -r.tat }
  }

  /**
   * This replica's share of the rate while replicas may reserve apart (a fallback, the settling after it):
   * the shares add up to the rate, never more. A replica that lost sight of some (Redis lost its data and
   * counts them again) divides among as many as before.
   */
  #shareOf(key: PermitKey, params: GcraParams): GcraParams {
    const replicas = this.host.replicas()
    const mine =
      replicas < this.#replicasBefore || this.host.shareOf === undefined
        ? Math.floor(params.spaced / Math.max(1, replicas, this.#replicasBefore))
        : this.host.shareOf(key, params.spaced)
    return shareOf(params, mine)
  }

  /** The share, or (none here) the rate's hold alone: a local hold or count never keeps an endless TAT. */
  #localParams(key: PermitKey, params: GcraParams): GcraParams {
    const share = this.#shareOf(key, params)
    return share.spaced === 0 ? HOLD_ONLY : share
  }

  /** No share of the rate here (a rate below the replicas' count): asked again a window later, or refused past the deadline. */
  #noShare(params: GcraParams, maxWaitMs: number): Reservation {
    return { delayMs: Math.max(50, Math.min(params.windowMs, maxWaitMs)), granted: false }
  }

  #forgetLocal(key: PermitKey): void {
    this.#local.forget(key)
  }

  /** The Redis limiter's mode changed (its observer): a fallback's end starts the settling time. */
  modeChanged(mode: LimiterMode): void {
    // a Redis that lost its data counts the replicas again from one as their heartbeats come in
    if (mode !== 'redis' && this.#fallbackEndedAt !== Infinity) {
      this.#replicasBefore = this.host.replicas()
      this.#fallbackBeganAt = this.now()
    }
    this.#fallbackEndedAt =
      mode === 'redis' ? (this.#fallbackEndedAt === Infinity ? this.now() : this.#fallbackEndedAt) : Infinity
  }

  hold(key: PermitKey, forMs: number, params: GcraParams = HOLD_ONLY): void {
    if (this.host.mode() !== 'redis') return this.#local.hold(key, forMs, this.#localParams(key, params))
    // remembered as a next free start, so a fallback that begins meanwhile honours it too
    const id = `${key.instance}\0${key.endpoint}`
    this.#nextFree.set(id, Math.max(this.#nextFree.get(id) ?? 0, this.now() + forMs))
    const news = this.#news({ key, holdMs: forMs })
    holdStarts(this.host.scripts, this.#redisKey(key), forMs, params, news).catch((err: unknown) => {
      this.log.warn(
        { err, instance: key.instance, endpoint: key.endpoint },
        'limiter: could not share a Retry-After hold through Redis; held on this replica only',
      )
      this.#local.hold(key, forMs, params)
    })
  }

  /** A learned rate, shared so every replica's reservations apply it until `ttlMs` passes. */
  learn(key: PermitKey, params: GcraParams, ttlMs: number, rate?: Rate, source?: 'published' | 'learned'): void {
    if (this.host.mode() !== 'redis') return
    const news = rate === undefined ? undefined : this.#news({ key, rate, ttlMs, source: source ?? 'learned' })
    shareLearnedRate(this.host.scripts, this.#redisKey(key), params, ttlMs, news).catch((err: unknown) => {
      this.log.warn(
        { err, instance: key.instance, endpoint: key.endpoint },
        'limiter: could not share a learned rate through Redis',
      )
    })
  }

  sync(key: PermitKey, params: GcraParams, used: number, added: number): void {
    if (this.host.mode() !== 'redis') return this.#local.sync(key, this.#localParams(key, params), used, added)
    syncStarts(this.host.scripts, this.#redisKey(key), params, used, added).catch((err: unknown) => {
      this.log.warn(
        { err, instance: key.instance, endpoint: key.endpoint },
        'limiter: could not count the starts an answer said the API counted; counted on this replica only',
      )
      this.#local.sync(key, params, used, added)
    })
  }

  leave(key: PermitKey, waiter: string): void {
    if (this.host.mode() !== 'redis') return
    leaveStarts(this.host.scripts, this.#redisKey(key), waiter).catch(() => {
      // its place lapses a quarter second after the start it was told
    })
  }

  countAccepted(key: PermitKey, windowMs: number): void {
    if (this.host.mode() !== 'redis') return
    countAccepted(this.host.scripts, this.#redisKey(key), windowMs).catch(() => {
      // one accepted start not counted: the rate learned is one lower, never higher
    })
  }

  async acceptedWithin(key: PermitKey, windowMs: number): Promise<number | undefined> {
    if (this.host.mode() !== 'redis') return undefined
    return acceptedWithin(this.host.scripts, this.#redisKey(key), windowMs).catch(() => undefined)
  }

  nextFreeMs(key: PermitKey, params: GcraParams): number {
    if (this.host.mode() !== 'redis') return this.#local.nextFreeMs(key, params)
    const at = this.#nextFree.get(`${key.instance}\0${key.endpoint}`)
    return at === undefined ? 0 : Math.max(0, at - this.now())
  }

  /**
   * A start taken and not sent. A local one (its TAT negated by #reserveLocally) goes back to the local
   * gate; one taken through Redis goes back there, if nobody reserved after it. Never throws.
   */
  giveBack(key: PermitKey, params: GcraParams, tat: number): void {
    if (tat < 0) return this.#local.giveBack(key, this.#shareOf(key, params), -tat)
    if (this.host.mode() !== 'redis') return
    giveStartBack(this.host.scripts, this.#redisKey(key), params, tat).catch(() => {
      // a start not given back is one start fewer, never one more
    })
  }

  close(): void {
    this.#seeded.clear()
    this.#lastTaken.clear()
    this.#local.close()
  }
}
