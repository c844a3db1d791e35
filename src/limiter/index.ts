import { FairShare } from './fairness/policy.js'
import type { FairnessSettings } from './fairness/settings.js'
import { createMemoryLimiter } from './memory/index.js'
import type { RedisSettings } from './redis/settings.js'
import { learnOptionsOf, type LimitOrigin } from './learning/policy.js'
import type { LearningSettings } from './learning/settings.js'
import type { LearnOptions, Limiter, LimiterObserver } from './types.js'

export interface LimiterDeps {
  readonly log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void }
  readonly observer?: LimiterObserver
}

/** The backend the settings ask for: Redis when `redis.url` is set, else in-process. */
export async function createLimiter(settings: { readonly redis: RedisSettings; readonly fairness?: FairnessSettings }, deps: LimiterDeps): Promise<Limiter> {
  const fairness = new FairShare(settings.fairness)
  const observer = withLimitLog(deps.observer, deps.log)
  if (settings.redis.url === undefined) return createMemoryLimiter({ observer, fairness })
  // Loaded only when used: ioredis alone adds about 10 MB to an in-process replica's resident
  // memory (docs/benchmarks.md, "Memory").
  const { createRedisLimiter } = await import('./redis/index.js')
  return createRedisLimiter(settings.redis, { ...deps, observer, fairness })
}

/** Every change of a learned limit is one log line (from, to, why; README "Learned limits"), then goes to the observer. */
function withLimitLog(observer: LimiterObserver | undefined, log: LimiterDeps['log']): LimiterObserver {
  return {
    ...observer,
    limitChanged(key, change) {
      const why =
        change.reason === 'throttled'
          ? `the API answered 429 with ${change.held} in progress`
          : `requests succeeded while all ${change.from} permits were in use`
      log.info(
        { instance: key.instance, endpoint: key.endpoint, from: change.from, to: change.to, learned: Number(change.value.toFixed(3)), reason: change.reason, held: change.held },
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
