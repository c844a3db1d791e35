import { redisSource } from './redis-source.js'

/** The image of the Redis container, when testcontainers provides Redis (redis-source.ts). */
export const REDIS_IMAGE = 'redis:7.4-alpine'

/**
 * vitest globalSetup: with no SLUICE_TEST_REDIS_URL and no `redis-server` on PATH, starts one Redis
 * container with testcontainers and sets SLUICE_TEST_REDIS_URL to it for the test processes, which
 * start after this. testcontainers is a dev dependency imported only here, only then: where
 * redis-server is installed, Docker is never needed. The tests that stop or freeze Redis, and the
 * Cluster and Sentinel tests, skip themselves on a shared server, as with any SLUICE_TEST_REDIS_URL.
 */
export default async function startRedisContainer(): Promise<(() => Promise<void>) | undefined> {
  if (redisSource(process.env) !== 'container') return undefined
  let container: { getConnectionUrl(): string; stop(): Promise<unknown> }
  try {
    const { RedisContainer } = await import('@testcontainers/redis')
    container = await new RedisContainer(REDIS_IMAGE).start()
  } catch (err) {
    process.stderr.write(
      `\nThe Redis tests need redis-server on PATH, Docker (for a Redis container), or SLUICE_TEST_REDIS_URL; ` +
        `no redis-server was found and no container could be started: ${(err as Error).message}\n\n`,
    )
    return undefined
  }
  process.env.SLUICE_TEST_REDIS_URL = container.getConnectionUrl()
  process.stderr.write(
    `Redis for the tests: a ${REDIS_IMAGE} container (testcontainers) at ${process.env.SLUICE_TEST_REDIS_URL}\n`,
  )
  return async () => {
    await container.stop()
  }
}
