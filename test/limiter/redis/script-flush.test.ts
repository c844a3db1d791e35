import { describe, expect, it } from 'vitest'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, key, opts, redisLimiter, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

const redis = useRedis()

// SCRIPT FLUSH empties the whole server's script cache: never on a shared server
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(`redis limiter: SCRIPT FLUSH ${needs('redis-server')}`, () => {
  it('keeps working in redis mode after the server forgets every script', async () => {
    const settings = testSettings(redis.url)
    const modes: string[] = []
    const a = await redisLimiter(settings, { observer: { modeChanged: (m) => modes.push(m) } })
    const b = await redisLimiter(settings)
    const inspect = redis.client()
    const held = await a.acquire(key, opts(1))
    const waiting = b.acquire(key, opts(1))
    await inspect.script('FLUSH')
    held.release() // release script: NOSCRIPT, then sent again in full
    const handed = await waiting
    await inspect.script('FLUSH')
    handed.release()
    await inspect.script('FLUSH')
    const again = await a.acquire(key, opts(1))
    again.release()
    expect(a.mode()).toBe('redis')
    expect(b.mode()).toBe('redis')
    expect(modes).toEqual(['redis'])
    await closeAll([a, b])
  })
})
