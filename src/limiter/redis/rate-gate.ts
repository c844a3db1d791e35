import { MemoryRateGate, type RateGate } from '../rate/gate.js'
import { HOLD_ONLY, shareOf, type GcraParams, type Reservation } from '../rate/gcra.js'
import type { LimiterMode, PermitKey } from '../types.js'
import { BoundedMap } from '../../bounded/index.js'
import { tagOf } from './keys.js'
import { holdStarts, reserveStart, shareLearnedRate } from './rate/index.js'
import type { ScriptRunner } from './script.js'

/** What the gate needs of the Redis limiter beside it: its scripts, its mode, how many replicas share. */
export interface RateGateHost {
  readonly scripts: ScriptRunner
  readonly keyPrefix: string
  mode(): LimiterMode
  replicas(): number
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
  /** the next free start as the last reservation here saw it (ms on this replica's clock), for `/status` */
  readonly #nextFree = new BoundedMap<string, number>(10_000)
  /** when this replica last left a fallback (ms, its clock); Infinity while in one */
  #fallbackEndedAt = -Infinity
  /** how many replicas shared Redis when the last fallback began */
  #replicasBefore = 1
  /** keys whose local starts were put after what Redis last said, since the fallback began */
  readonly #seeded = new BoundedMap<string, true>(10_000)

  constructor(
    private readonly host: RateGateHost,
    private readonly log: { warn(obj: object, msg: string): void },
    now: () => number = Date.now,
  ) {
    this.#local = new MemoryRateGate(now)
  }

  #redisKey(key: PermitKey): string {
    return this.#keys.getOrMake(`${key.instance}\0${key.endpoint}`, () => `${this.host.keyPrefix}:{${tagOf(key)}}:rate`)
  }

  reserve(key: PermitKey, params: GcraParams, maxWaitMs: number): Reservation | Promise<Reservation> {
    const mode = this.host.mode()
    if (mode === 'open') return GRANTED_NOW
    if (mode !== 'redis') return this.#reserveLocally(key, params, maxWaitMs)
    if (this.#seeded.size > 0) this.#seeded.clear()
    const id = `${key.instance}\0${key.endpoint}`
    // Right after a fallback, other replicas may still reserve locally at their share: this one keeps to
    // its share too, through Redis, until they have all seen Redis back (docs/redis-limiter.md, "Rates").
    const share =
      Date.now() < this.#fallbackEndedAt + this.host.settleMs
        ? shareOf(params, Math.max(this.host.replicas(), this.#replicasBefore))
        : params
    // Back from a fallback: starts this replica reserved meanwhile are still ahead; Redis holds its
    // next start a window past them (docs/redis-limiter.md, "Rates", "Redis lost and back").
    const localAhead = this.#local.size > 0 ? this.#local.nextFreeMs(key, share) : 0
    const sent =
      localAhead > 0
        ? holdStarts(this.host.scripts, this.#redisKey(key), localAhead + share.intervalMs, share).then(() =>
            this.#forgetLocal(key),
          )
        : Promise.resolve()
    return sent
      .then(() => reserveStart(this.host.scripts, this.#redisKey(key), share, maxWaitMs))
      .then(
        (r) => {
          this.#nextFree.set(id, Date.now() + r.nextFreeMs)
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
   * At this replica's share of the rate. The first local start of a key waits one window past the next
   * free start Redis last told of: reservations other replicas made before Redis went away are at most a
   * window's worth when the key's concurrency limit is at most N (docs/redis-limiter.md, "Rates").
   */
  #reserveLocally(key: PermitKey, params: GcraParams, maxWaitMs: number): Reservation {
    const id = `${key.instance}\0${key.endpoint}`
    const share = shareOf(params, this.host.replicas())
    if (!this.#seeded.has(id)) {
      this.#seeded.set(id, true)
      const seen = this.#nextFree.get(id)
      if (seen !== undefined && seen + params.windowMs > Date.now())
        this.#local.hold(key, seen + params.windowMs - Date.now(), share)
    }
    return this.#local.reserve(key, share, maxWaitMs)
  }

  #forgetLocal(key: PermitKey): void {
    this.#local.forget(key)
  }

  /** The Redis limiter's mode changed (its observer): a fallback's end starts the settling time. */
  modeChanged(mode: LimiterMode): void {
    // a Redis that lost its data counts the replicas again from one as their heartbeats come in
    if (mode !== 'redis' && this.#fallbackEndedAt !== Infinity) this.#replicasBefore = this.host.replicas()
    this.#fallbackEndedAt =
      mode === 'redis' ? (this.#fallbackEndedAt === Infinity ? Date.now() : this.#fallbackEndedAt) : Infinity
  }

  hold(key: PermitKey, forMs: number, params: GcraParams = HOLD_ONLY): void {
    if (this.host.mode() !== 'redis') return this.#local.hold(key, forMs, shareOf(params, this.host.replicas()))
    // remembered as a next free start, so a fallback that begins meanwhile honours it too
    const id = `${key.instance}\0${key.endpoint}`
    this.#nextFree.set(id, Math.max(this.#nextFree.get(id) ?? 0, Date.now() + forMs))
    holdStarts(this.host.scripts, this.#redisKey(key), forMs, params).catch((err: unknown) => {
      this.log.warn(
        { err, instance: key.instance, endpoint: key.endpoint },
        'limiter: could not share a Retry-After hold through Redis; held on this replica only',
      )
      this.#local.hold(key, forMs, params)
    })
  }

  /** A learned rate, shared so every replica's reservations apply it until `ttlMs` passes. */
  learn(key: PermitKey, params: GcraParams, ttlMs: number): void {
    if (this.host.mode() !== 'redis') return
    shareLearnedRate(this.host.scripts, this.#redisKey(key), params, ttlMs).catch((err: unknown) => {
      this.log.warn(
        { err, instance: key.instance, endpoint: key.endpoint },
        'limiter: could not share a learned rate through Redis',
      )
    })
  }

  nextFreeMs(key: PermitKey, params: GcraParams): number {
    if (this.host.mode() !== 'redis') return this.#local.nextFreeMs(key, params)
    const at = this.#nextFree.get(`${key.instance}\0${key.endpoint}`)
    return at === undefined ? 0 : Math.max(0, at - Date.now())
  }

  close(): void {
    this.#seeded.clear()
    this.#local.close()
  }
}
