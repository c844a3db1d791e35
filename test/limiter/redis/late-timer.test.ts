import { describe, expect, it } from 'vitest'
import type { LimiterMode } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { key, opts, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()

/** Blocks the event loop, as a long garbage collection or a CPU-starved pod would. */
function stall(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy
  }
}

describe('redis limiter: an event-loop stall longer than commandTimeoutMs', () => {
  it('does not send a healthy replica to its fallback: a late timer gives the script a timeout of awake time again', async () => {
    // 150 ms: a loaded 2-core machine can take 50 ms of awake time over a heartbeat (a real timeout, not this test's case)
    const settings = testSettings(redis.url, { commandTimeoutMs: 150, leaseMs: 6_000 })
    const modes: LimiterMode[] = []
    const failed: string[] = []
    const limiter = await redisLimiter(settings, {
      observer: {
        modeChanged: (m) => modes.push(m),
        redisCommand: (op, _s, ok) => void (ok || failed.push(op)),
      },
    })
    modes.length = 0
    for (let i = 0; i < 3; i++) {
      // the acquire script is on the wire; Redis answers at once, but the loop is blocked six timeouts long
      const acquiring = limiter.acquire(key, opts(1))
      stall(900)
      const permit = await acquiring
      permit.release()
    }
    await limiter.status()
    expect(failed).toEqual([])
    expect(modes).toEqual([])
    expect(limiter.mode()).toBe('redis')
    await limiter.close()
  })
})
