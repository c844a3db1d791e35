import { createMemoryLimiter } from './memory/index.js'
import type { RedisSettings } from './redis/settings.js'
import type { Limiter, LimiterObserver } from './types.js'

export interface LimiterDeps {
  readonly log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void }
  readonly observer?: LimiterObserver
}

/** The backend the settings ask for: Redis when `redis.url` is set, else in-process. */
export async function createLimiter(settings: { readonly redis: RedisSettings }, deps: LimiterDeps): Promise<Limiter> {
  if (settings.redis.url === undefined) return createMemoryLimiter({ observer: deps.observer })
  // Loaded only when used: ioredis alone adds about 10 MB to an in-process replica's resident
  // memory (docs/benchmarks.md, "Memory").
  const { createRedisLimiter } = await import('./redis/index.js')
  return createRedisLimiter(settings.redis, deps)
}
