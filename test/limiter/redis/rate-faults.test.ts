import { performance } from 'node:perf_hooks'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { RatedLimiter } from '../../../src/limiter/rate/limiter.js'
import { gcraParams, HOLD_ONLY } from '../../../src/limiter/rate/gcra.js'
import { RedisRateGate } from '../../../src/limiter/redis/index.js'
import type { LimiterMode } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, key, memoryLog, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()

/** Two replicas' gates on real Redis; each replica's mode is the test's to set (a fallback without stopping Redis for the other). */
async function twoGates() {
  const settings = testSettings(redis.url)
  const limiters = [await redisLimiter(settings, { replicaId: 'a' }), await redisLimiter(settings, { replicaId: 'b' })]
  onTestFinished(() => closeAll(limiters))
  const modes: LimiterMode[] = ['redis', 'redis']
  const gates = limiters.map(
    (limiter, i) =>
      new RedisRateGate(
        {
          scripts: limiter.scripts,
          keyPrefix: settings.keyPrefix,
          mode: () => modes[i]!,
          replicas: () => 2,
          settleMs: 2_000,
        },
        memoryLog(),
      ),
  )
  const setMode = (i: number, mode: LimiterMode): void => {
    modes[i] = mode
    gates[i]!.modeChanged(mode)
  }
  return { gates: gates as [RedisRateGate, RedisRateGate], setMode, prefix: settings.keyPrefix, limiters }
}

const untilWritten = async (prefix: string): Promise<void> => {
  const inspect = redis.client()
  for (let i = 0; i < 100 && (await inspect.keys(`${prefix}:*:rate`)).length === 0; i++)
    await new Promise((r) => setTimeout(r, 20))
}

describe('the Redis rate gate under faults', () => {
  it('a Retry-After hold stops every start until it ends, at any burst (burst = requests)', async () => {
    const { gates, prefix } = await twoGates()
    const params = gcraParams({ requests: 10, windowMs: 1000, burst: 10 })
    gates[0].hold(key, 5_000, HOLD_ONLY)
    await untilWritten(prefix)
    const r = await gates[1].reserve(key, params, 0)
    expect(r.granted).toBe(false)
    expect(r.delayMs).toBeGreaterThan(4_500)
  })

  it('Redis losing its data is not read as "nothing started": a replica that started within the window holds the key a window', async () => {
    if (!redis.managed) return
    const { gates } = await twoGates()
    const params = gcraParams({ requests: 4, windowMs: 1000, burst: 4 })
    for (let i = 0; i < 4; i++) expect((await gates[i % 2]!.reserve(key, params, 0)).granted).toBe(true)
    await redis.client().flushall()
    const after = await gates[0].reserve(key, params, 0)
    expect(after.granted).toBe(false)
    expect(after.delayMs).toBeGreaterThan(800)
    // and the other replica finds the hold too
    expect((await gates[1].reserve(key, params, 0)).granted).toBe(false)
  })

  it('fallback local: a replica that never used the key does not start its share at once after starts taken through Redis', async () => {
    const { gates, setMode } = await twoGates()
    const params = gcraParams({ requests: 4, windowMs: 1000, burst: 4 })
    for (let i = 0; i < 4; i++) expect((await gates[0].reserve(key, params, 0)).granted).toBe(true)
    setMode(1, 'local')
    const r = await gates[1].reserve(key, params, 0)
    expect(r.granted).toBe(false)
    expect(r.delayMs).toBeGreaterThan(800)
  })

  it('starts whose timers fire late (a 1.2 s stall) are checked again through Redis, never bunched', async () => {
    const { gates, limiters } = await twoGates()
    const limiter = new RatedLimiter(limiters[0]!, gates[0], { enabled: true, idleMs: 60_000, marginMs: 0 }, undefined)
    const starts: number[] = []
    const options = {
      limit: 50,
      deadline: Date.now() + 60_000,
      maxQueue: 1000,
      rate: { requests: 4, windowMs: 1000, burst: 1 },
    }
    const all = Array.from({ length: 8 }, () =>
      limiter.acquire(key, options).then((permit) => {
        starts.push(performance.now())
        permit.markSent()
        permit.release('success')
      }),
    )
    await vi.waitUntil(() => starts.length >= 1, { timeout: 5_000 })
    const until = performance.now() + 1_200
    while (performance.now() < until);
    await Promise.all(all)
    // 4 per second, 250 ms apart: no 900 ms span holds more than 4
    const sorted = [...starts].sort((a, b) => a - b)
    let most = 0
    for (let i = 0, j = 0; i < sorted.length; i++) {
      while (sorted[i]! - sorted[j]! >= 900) j++
      most = Math.max(most, i - j + 1)
    }
    expect(most).toBeLessThanOrEqual(4)
  })
})
