import { describe, expect, it } from 'vitest'
import startRedisContainer from '../../support/redis-container.js'
import { hasRedisServer, redisSource } from '../../support/redis-source.js'
import { needs } from '../../support/tools.js'

/** Where the Redis tests get Redis: SLUICE_TEST_REDIS_URL, else redis-server, else a testcontainers container. */
describe('the Redis the tests use', () => {
  it('SLUICE_TEST_REDIS_URL first, then redis-server on PATH, then a container', () => {
    expect(redisSource({ SLUICE_TEST_REDIS_URL: 'redis://127.0.0.1:7000' }, () => true)).toBe('url')
    expect(redisSource({ SLUICE_TEST_REDIS_URL: 'redis://127.0.0.1:7000' }, () => false)).toBe('url')
    expect(redisSource({}, () => true)).toBe('redis-server')
    expect(redisSource({ SLUICE_TEST_REDIS_URL: '' }, () => true)).toBe('redis-server')
    expect(redisSource({}, () => false)).toBe('container')
  })

  it.skipIf(!hasRedisServer())(
    `with redis-server on PATH, no container is started ${needs('redis-server')}`,
    async () => {
      const before = process.env.SLUICE_TEST_REDIS_URL
      expect(await startRedisContainer()).toBeUndefined()
      expect(process.env.SLUICE_TEST_REDIS_URL).toBe(before)
    },
  )
})
