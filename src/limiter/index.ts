import { FairShare } from './fairness/policy.js'
import type { FairnessSettings } from './fairness/settings.js'
import { createMemoryLimiter } from './memory/index.js'
import { createRedisLimiter } from './redis/index.js'
import type { RedisSettings } from './redis/settings.js'
import type { Limiter, LimiterObserver } from './types.js'

export interface LimiterDeps {
  readonly log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void }
  readonly observer?: LimiterObserver
}

/**
 * The backend the settings ask for: Redis when `redis.url` is set, else in-process; both share
 * permits between apps by `fairness` (README "Fair share between apps").
 */
export function createLimiter(settings: { readonly redis: RedisSettings; readonly fairness?: FairnessSettings }, deps: LimiterDeps): Promise<Limiter> {
  const fairness = new FairShare(settings.fairness)
  if (settings.redis.url !== undefined) return createRedisLimiter(settings.redis, { ...deps, fairness })
  return Promise.resolve(createMemoryLimiter({ observer: deps.observer, fairness }))
}
