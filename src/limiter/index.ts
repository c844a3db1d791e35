import { createMemoryLimiter } from './memory/index.js'
import { createRedisLimiter } from './redis/index.js'
import type { RedisSettings } from './redis/settings.js'
import type { Limiter, LimiterObserver } from './types.js'

export interface LimiterDeps {
  readonly log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void }
  readonly observer?: LimiterObserver
}

/** The backend the settings ask for: Redis when `redis.url` is set, else in-process. */
export function createLimiter(settings: { readonly redis: RedisSettings }, deps: LimiterDeps): Promise<Limiter> {
  if (settings.redis.url !== undefined) return createRedisLimiter(settings.redis, deps)
  return Promise.resolve(createMemoryLimiter({ observer: deps.observer }))
}
