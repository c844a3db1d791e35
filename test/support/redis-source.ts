import { spawnSync } from 'node:child_process'

/**
 * Where the Redis tests get their servers, in this order: SLUICE_TEST_REDIS_URL when set (one server
 * the tests share, each under its own key prefix); else `redis-server` processes of their own (the
 * only source with which tests can also stop, freeze and restart Redis, or start a Cluster and a
 * Sentinel); else, with Docker, one Redis container for the whole run, started by testcontainers
 * (test/support/redis-container.ts) and handed to the tests as SLUICE_TEST_REDIS_URL.
 */
export type RedisSource = 'url' | 'redis-server' | 'container'

export const hasRedisServer = (): boolean => spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0

export function redisSource(env: NodeJS.ProcessEnv, redisServerOnPath: () => boolean = hasRedisServer): RedisSource {
  if (env.SLUICE_TEST_REDIS_URL) return 'url'
  return redisServerOnPath() ? 'redis-server' : 'container'
}
