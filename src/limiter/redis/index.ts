import { RedisLimiter, type RedisLimiterDeps } from './limiter.js'
import type { RedisSettings } from './settings.js'

export { RedisLimiter, type RedisLimiterDeps, type RedisLimiterLog } from './limiter.js'
export { LeaseLostError } from './errors.js'
export { REDIS_OPERATIONS } from './operations.js'
export { RedisRateGate } from './rate-gate.js'
export { redisSettingsSchema, type RedisSettings } from './settings.js'

/**
 * The Redis backend of the limiter: permits shared by every replica. Never throws when Redis is
 * down at start: it serves from the configured fallback and switches to Redis when Redis answers.
 */
export async function createRedisLimiter(settings: RedisSettings, deps: RedisLimiterDeps): Promise<RedisLimiter> {
  const limiter = new RedisLimiter(settings, deps)
  await limiter.start()
  return limiter
}
