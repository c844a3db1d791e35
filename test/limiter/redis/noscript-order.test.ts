import { describe, expect, it } from 'vitest'
import { semaphoreKeysOf, tagOf } from '../../../src/limiter/redis/keys.js'
import { RELEASE_LUA } from '../../../src/limiter/redis/release/lua.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { key, opts, redisLimiter, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

const redis = useRedis()

// SCRIPT FLUSH empties the whole server's script cache: never on a shared server
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `redis limiter: an acquire re-sent after NOSCRIPT ${needs('redis-server')}`,
  () => {
    it('is dropped when its waiter was withdrawn meanwhile: it never runs after its own withdrawal', async () => {
      const settings = testSettings(redis.url)
      const a = await redisLimiter(settings)
      const inspect = redis.client()
      // another replica holds the only permit: the acquire below queues
      await inspect.zadd(semaphoreKeysOf(settings.keyPrefix, tagOf(key)).holders, Date.now() + 60_000, 'other/1')
      await inspect.script('FLUSH')
      await inspect.script('LOAD', RELEASE_LUA) // the withdrawal runs at once; the acquire gets NOSCRIPT
      const abort = new AbortController()
      const waiting = a.acquire(key, opts(1, { signal: abort.signal }))
      abort.abort() // withdrawn in the same turn: its release script goes out right behind the acquire
      await expect(waiting).rejects.toMatchObject({ name: 'AbortError' })
      // two round trips on the same connection: any re-sent acquire has run by the second reply
      await a.status()
      await a.status()
      expect((await leftInRedis(inspect, settings.keyPrefix)).queued).toBe(0)
      await a.close()
    })
  },
)
