import { FairShare, queueShareOf } from './fairness/policy.js'
import type { FairnessSettings } from './fairness/settings.js'
import { createMemoryLimiter } from './memory/index.js'
import type { RedisSettings } from './redis/settings.js'
import { learnOptionsOf, type LimitOrigin } from './learning/policy.js'
import type { LearningSettings } from './learning/settings.js'
import { MemoryRateGate } from './rate/gate.js'
import { RatedLimiter } from './rate/limiter.js'
import type { LearnOptions, LimiterObserver, PermitKey } from './types.js'

export interface LimiterDeps {
  readonly log: {
    info(obj: object, msg: string): void
    warn(obj: object, msg: string): void
    error(obj: object, msg: string): void
  }
  readonly observer?: LimiterObserver
}

/** The backend the settings ask for: Redis when `redis.url` is set, else in-process. */
export async function createLimiter(
  settings: {
    readonly redis: RedisSettings
    readonly fairness?: FairnessSettings
    readonly learning?: LearningSettings
    readonly limits?: { readonly rateMarginMs: number }
    /** with both, an app's share of a key's queue (queueShareOf); either absent: none */
    readonly queue?: { readonly maxLength: number; readonly maxShare: number }
    readonly apps?: { readonly enabled: boolean }
  },
  deps: LimiterDeps,
): Promise<RatedLimiter> {
  const queueShare =
    settings.queue === undefined ? Infinity : queueShareOf(settings.queue, settings.apps?.enabled ?? false)
  const fairness = new FairShare(settings.fairness, queueShare)
  const observer = withLimitLog(deps.observer, deps.log)
  // rates beside the concurrency limit, on either backend (docs/redis-limiter.md, "Rates")
  const learning = {
    enabled: settings.learning?.rates ?? true,
    idleMs: settings.learning?.idleMs ?? 3_600_000,
    marginMs: settings.limits?.rateMarginMs ?? 0,
  }
  if (settings.redis.url === undefined)
    return new RatedLimiter(createMemoryLimiter({ observer, fairness }), new MemoryRateGate(), learning, observer)
  // Loaded only when used: ioredis alone adds about 10 MB to an in-process replica's resident
  // memory (docs/benchmarks.md, "Memory").
  const { createRedisLimiter, RedisRateGate } = await import('./redis/index.js')
  // the rate gate hears of mode changes too (a fallback's end); it is made once the limiter exists
  const late: { gate?: InstanceType<typeof RedisRateGate> } = {}
  const modes: LimiterObserver = {
    ...observer,
    modeChanged(mode) {
      late.gate?.modeChanged(mode)
      observer.modeChanged?.(mode)
    },
  }
  const redis = await createRedisLimiter(settings.redis, { ...deps, observer: modes, fairness })
  // every replica has seen Redis back within a probe and a reconnection (about a second): two leases is ample
  const host = {
    scripts: redis.scripts,
    keyPrefix: settings.redis.keyPrefix,
    mode: () => redis.mode(),
    replicas: () => redis.replicas(),
    shareOf: (key: PermitKey, n: number) => redis.heard.shareOf(key, n),
    settleMs: 2 * settings.redis.leaseMs,
  }
  const gate = (late.gate = new RedisRateGate(host, deps.log))
  if (redis.mode() !== 'redis') gate.modeChanged(redis.mode())
  return new RatedLimiter(redis, gate, learning, observer)
}

/**
 * Every change of a learned limit, and every rate an answer taught, is one log line naming the key
 * (README "Learned limits", docs/learned-limits.md "Rates"), then goes to the observer.
 */
function withLimitLog(observer: LimiterObserver | undefined, log: LimiterDeps['log']): LimiterObserver {
  return {
    ...observer,
    rateLearned(key, what, rate) {
      if (rate !== undefined)
        log.info(
          {
            instance: key.instance,
            endpoint: key.endpoint,
            requests: rate.requests,
            windowMs: rate.windowMs,
            how: what,
          },
          `limiter: rate of ${key.endpoint} (instance ${key.instance}) ${what === 'rate' ? 'published by the API' : 'learned from its 429s'}: ${rate.requests} per ${rate.windowMs} ms`,
        )
      observer?.rateLearned?.(key, what, rate)
    },
    limitChanged(key, change) {
      const why =
        change.reason === 'throttled'
          ? `the API answered 429 with ${change.held} in progress`
          : `requests succeeded while all ${change.from} permits were in use`
      log.info(
        {
          instance: key.instance,
          endpoint: key.endpoint,
          from: change.from,
          to: change.to,
          learned: Number(change.value.toFixed(3)),
          reason: change.reason,
          held: change.held,
        },
        `limiter: learned limit of ${key.endpoint} (instance ${key.instance}) ${change.to < change.from ? 'lowered' : 'raised'} from ${change.from} to ${change.to}: ${why}`,
      )
      observer?.limitChanged?.(key, change)
    },
  }
}

/** `learnOptionsOf` once per endpoint: the proxy asks on every request. */
export function learnOptionsCache(settings: LearningSettings): (endpoint: LimitOrigin) => LearnOptions | undefined {
  const known = new WeakMap<LimitOrigin, LearnOptions | null>()
  return (endpoint) => {
    let options = known.get(endpoint)
    if (options === undefined) {
      options = learnOptionsOf(endpoint, settings) ?? null
      known.set(endpoint, options)
    }
    return options ?? undefined
  }
}

export { learningSettingsSchema, type LearningSettings } from './learning/settings.js'
export { RatedLimiter } from './rate/limiter.js'
