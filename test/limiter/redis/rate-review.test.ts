/**
 * Review of the rates change (issue 38): cases found reading cold. Each test states the invariant; on the
 * branch as reviewed (1104bb6) these fail — see the review report.
 */
import { performance } from 'node:perf_hooks'
import { describe, expect, it, onTestFinished } from 'vitest'
import { RatedLimiter } from '../../../src/limiter/rate/limiter.js'
import { gcraParams, type GcraParams } from '../../../src/limiter/rate/gcra.js'
import type { RateGate } from '../../../src/limiter/rate/gate.js'
import { RedisRateGate } from '../../../src/limiter/redis/index.js'
import type { LimiterMode, PermitKey } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, key, memoryLog, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()
const learning = { enabled: true, idleMs: 60_000, marginMs: 0 }

async function twoGates(leaseMs = 600) {
  const settings = testSettings(redis.url, { leaseMs })
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
  return { gates: gates as [RedisRateGate, RedisRateGate], limiters, prefix: settings.keyPrefix }
}

function mostWithin(times: readonly number[], spanMs: number): number {
  const sorted = [...times].sort((a, b) => a - b)
  let most = 0
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= spanMs) j++
    most = Math.max(most, i - j + 1)
  }
  return most
}

describe('review: rates through Redis', () => {
  it('a Retry-After hold taught on replica A stops starts of the key on replica B (no rate configured)', async () => {
    const { gates, limiters, prefix } = await twoGates()
    const a = new RatedLimiter(limiters[0]!, gates[0], learning, undefined)
    const b = new RatedLimiter(limiters[1]!, gates[1], learning, undefined)
    a.observeAnswer(key, 429, { 'retry-after': '5' }, true)
    const inspect = redis.client()
    for (let i = 0; i < 100 && (await inspect.keys(`${prefix}:*:rate`)).length === 0; i++)
      await new Promise((r) => setTimeout(r, 20))
    const began = performance.now()
    const permit = await b.acquire(key, { limit: 50, deadline: Date.now() + 20_000, maxQueue: 1000 })
    const waited = performance.now() - began
    permit.release('neutral')
    // B never saw the 429: its #taught is empty, so it never asks the gate where the hold is
    expect(waited).toBeGreaterThan(4_000)
  })

  it('Redis data loss: a replica that had not used the key (new, restarted) is not handed a fresh burst', async () => {
    if (!redis.managed) return
    const { gates } = await twoGates()
    const params = gcraParams({ requests: 4, windowMs: 1000, burst: 4 })
    // all four of the window's starts taken by replica A
    for (let i = 0; i < 4; i++) expect((await gates[0].reserve(key, params, 0)).granted).toBe(true)
    await redis.client().flushall()
    // replica B reaches Redis first after the loss, never having started on the key: it finds the rate
    // epoch it read at start-up gone, and holds the key a window
    const b = await gates[1].reserve(key, params, 0)
    expect(b.granted).toBe(false)
  })

  it('a stall between Redis granting a start and the replica reading the reply is checked again (not bunched)', async () => {
    // the default lease (5 s): a 1.2 s stall leaves the permit's lease sure, so only the rate's own check can catch it
    const { gates, limiters } = await twoGates(5_000)
    const real = gates[0]
    let stalled = false
    // the same gate; the first reply is read 1.2 s after Redis granted it (an event-loop stall, GC, a slow socket)
    const gate: RateGate = {
      reserve: async (k: PermitKey, p: GcraParams, w: number) => {
        const r = await real.reserve(k, p, w)
        if (r.granted && !stalled) {
          stalled = true
          const until = performance.now() + 1_200
          while (performance.now() < until);
        }
        return r
      },
      giveBack: (k, p, t) => real.giveBack(k, p, t),
      hold: (k, f, p) => real.hold(k, f, p),
      learn: (k, p, t) => real.learn(k, p, t),
      sync: (k, p, u, a) => real.sync(k, p, u, a),
      nextFreeMs: (k, p) => real.nextFreeMs(k, p),
      close: () => real.close(),
    }
    const limiter = new RatedLimiter(limiters[0]!, gate, learning, undefined)
    const sends: number[] = []
    const options = {
      limit: 50,
      deadline: Date.now() + 60_000,
      maxQueue: 1000,
      rate: { requests: 4, windowMs: 1000, burst: 1 },
    }
    // as the handler does: canStart() right before the send, else the permit goes back and it waits again
    const one = async (): Promise<void> => {
      for (;;) {
        const permit = await limiter.acquire(key, options)
        if (permit.canStart()) {
          sends.push(performance.now())
          permit.markSent()
          permit.release('success')
          return
        }
        permit.release()
      }
    }
    // the first request's reply is read late; the next ones arrive once it is sent (their permits fresh)
    await one()
    await Promise.all(Array.from({ length: 5 }, one))
    // 4/s, burst 1: no second holds more than 4 sends (on the branch the stalled start and the next go together)
    expect(mostWithin(sends, 1000)).toBeLessThanOrEqual(4)
    expect(mostWithin(sends, 100)).toBeLessThanOrEqual(1)
  })
})
