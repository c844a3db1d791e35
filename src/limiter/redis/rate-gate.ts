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
    if (mode !== 'redis') return this.#local.reserve(key, shareOf(params, this.host.replicas()), maxWaitMs)
    return reserveStart(this.host.scripts, this.#redisKey(key), params, maxWaitMs).then(
      (r) => {
        this.#nextFree.set(`${key.instance}\0${key.endpoint}`, Date.now() + r.nextFreeMs)
        return r
      },
      (err: unknown) => {
        this.log.warn({ err, instance: key.instance, endpoint: key.endpoint }, 'limiter: the rate script failed; this start reserved in process at this replica\'s share of the rate')
        return this.#local.reserve(key, shareOf(params, this.host.replicas()), maxWaitMs)
      },
    )
  }

  hold(key: PermitKey, forMs: number, params: GcraParams = HOLD_ONLY): void {
    // kept here too, so the fallback honours it if Redis goes away
    this.#local.hold(key, forMs, params)
    if (this.host.mode() !== 'redis') return
    holdStarts(this.host.scripts, this.#redisKey(key), forMs, params).catch((err: unknown) => {
      this.log.warn({ err, instance: key.instance, endpoint: key.endpoint }, 'limiter: could not share a Retry-After hold through Redis; held on this replica only')
    })
  }

  /** A learned rate, shared so every replica's reservations apply it until `ttlMs` passes. */
  learn(key: PermitKey, params: GcraParams, ttlMs: number): void {
    if (this.host.mode() !== 'redis') return
    shareLearnedRate(this.host.scripts, this.#redisKey(key), params, ttlMs).catch((err: unknown) => {
      this.log.warn({ err, instance: key.instance, endpoint: key.endpoint }, 'limiter: could not share a learned rate through Redis')
    })
  }

  nextFreeMs(key: PermitKey, params: GcraParams): number {
    if (this.host.mode() !== 'redis') return this.#local.nextFreeMs(key, params)
    const at = this.#nextFree.get(`${key.instance}\0${key.endpoint}`)
    return at === undefined ? 0 : Math.max(0, at - Date.now())
  }

  close(): void {
    this.#local.close()
  }
}
