import { afterEach, describe, expect, it } from 'vitest'
import type { LimiterMode } from '../../../src/limiter/types.js'
import { Scripts } from '../../../src/limiter/redis/script.js'
import { ACTIVE_SCRIPT } from '../../../src/limiter/redis/status/index.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { eventually, key, opts, redisLimiter, testSettings, heardByAll } from './helpers.js'
import { needs } from '../../support/tools.js'

const redis = useRedis()

// A Redis that keeps its connections open but answers nothing (SIGSTOP): only the limiter's own
// script deadline can notice it. Stopping the server is not possible on a shared one.
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(`redis limiter: Redis hangs ${needs('redis-server')}`, () => {
  afterEach(() => redis.thaw())

  it('a script unanswered within commandTimeoutMs sends the replica to its fallback, and it comes back when Redis answers', async () => {
    // a long lease: no renewal runs meanwhile, so the acquire is the only script in flight
    const settings = testSettings(redis.url, { commandTimeoutMs: 300, leaseMs: 6_000, fallback: 'local' })
    const modes: LimiterMode[] = []
    const failures: { name: string; seconds: number }[] = []
    const limiter = await redisLimiter(settings, {
      observer: {
        modeChanged: (m) => modes.push(m),
        redisCommand: (name, seconds, ok) => {
          if (!ok) failures.push({ name, seconds })
        },
      },
    })
    const inspect = redis.client()
    const holders = async (): Promise<number> => (await leftInRedis(inspect, settings.keyPrefix)).holders
    const queued = async (): Promise<number> => (await leftInRedis(inspect, settings.keyPrefix)).queued
    const first = await limiter.acquire(key, opts(2))
    first.release()
    await eventually(async () => (await holders()) === 0, 5_000, 'the release to reach Redis')
    await heardByAll(inspect, settings.keyPrefix, 1, 15_000) // it takes its local slots only then

    redis.freeze()
    // answered, by the fallback, once the acquire script has waited commandTimeoutMs in vain
    const during = await limiter.acquire(key, opts(2))
    expect(limiter.mode()).toBe('local')
    const timedOut = failures.find((f) => f.name === 'acquire')
    expect(timedOut?.seconds).toBeGreaterThanOrEqual(0.29)
    during.release()

    redis.thaw()
    await eventually(() => limiter.mode() === 'redis', 10_000, 'back to shared permits')
    const after = await limiter.acquire(key, opts(2))
    expect(await holders()).toBe(1)
    after.release()
    expect(modes).toEqual(['redis', 'local', 'redis'])
    // the acquire Redis ran late, after the thaw, was withdrawn: nothing is left held or queued
    await eventually(async () => (await holders()) === 0 && (await queued()) === 0, 5_000, 'Redis to be empty')
    await limiter.close()
  })

  it('every script in flight times out in turn, each after its own commandTimeoutMs', async () => {
    const client = redis.client()
    const failed: { name: string; at: number }[] = []
    const observer = {
      redisCommand: (name: string, _seconds: number, ok: boolean) => {
        if (!ok) failed.push({ name, at: performance.now() })
      },
    }
    const scripts = new Scripts(client, observer, 300)
    await scripts.run(ACTIVE_SCRIPT, ['sluice-hung:{global}:active'], []) // loaded, and Redis answers
    redis.freeze()
    const sentFirst = performance.now()
    const first = scripts.run(ACTIVE_SCRIPT, ['sluice-hung:{global}:active'], [])
    await new Promise((r) => setTimeout(r, 150))
    const second = scripts.run(ACTIVE_SCRIPT, ['sluice-hung:{global}:active'], [])
    // one timer serves both: after the first expires it must be armed again for the second
    await expect(first).rejects.toMatchObject({ code: 'SLUICE_REDIS_TIMEOUT' })
    await expect(second).rejects.toMatchObject({ code: 'SLUICE_REDIS_TIMEOUT' })
    expect(failed).toHaveLength(2)
    expect(failed[0]!.at - sentFirst).toBeGreaterThanOrEqual(299)
    expect(failed[1]!.at - failed[0]!.at).toBeGreaterThanOrEqual(140)
    redis.thaw()
    // the late answers are ignored; Redis answers the next script as usual
    await expect(scripts.run(ACTIVE_SCRIPT, ['sluice-hung:{global}:active'], [])).resolves.toEqual([])
  })
})
