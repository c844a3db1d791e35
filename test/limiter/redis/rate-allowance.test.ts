/**
 * The API's full allowance on Redis with several replicas (docs/learned-limits.md, "Rates"): a published
 * rate is followed as the API counts it — N at once and N again a window later — on every replica, and
 * the starts the API says it counted are counted once, however many replicas read them. Real redis-server.
 */
import { describe, expect, it, onTestFinished } from 'vitest'
import { RatedLimiter } from '../../../src/limiter/rate/limiter.js'
import { gcraParams } from '../../../src/limiter/rate/gcra.js'
import { RedisRateGate } from '../../../src/limiter/redis/index.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, key, memoryLog, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()
const learning = { enabled: true, idleMs: 60_000, marginMs: 0 }

async function twoReplicas() {
  const settings = testSettings(redis.url)
  const limiters = [await redisLimiter(settings, { replicaId: 'a' }), await redisLimiter(settings, { replicaId: 'b' })]
  onTestFinished(() => closeAll(limiters))
  const gates = limiters.map(
    (limiter) =>
      new RedisRateGate(
        {
          scripts: limiter.scripts,
          keyPrefix: settings.keyPrefix,
          mode: () => limiter.mode(),
          replicas: () => 2,
          settleMs: 2_000,
        },
        memoryLog(),
      ),
  )
  const rated = limiters.map((limiter, i) => new RatedLimiter(limiter, gates[i]!, learning, undefined))
  return { gates, rated, prefix: settings.keyPrefix }
}

const written = async (prefix: string, field: string): Promise<void> => {
  const inspect = redis.client()
  for (let i = 0; i < 100; i++) {
    const [k] = await inspect.keys(`${prefix}:*:rate`)
    if (k !== undefined && (await inspect.hexists(k, field)) === 1) return
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('a published rate on two replicas through Redis', () => {
  it('the starts the API counted are counted once, and what remains of the window starts at once', async () => {
    const { gates, rated, prefix } = await twoReplicas()
    const policy = '"sim";q=6;w=2'
    // each replica reads one answer: the API had counted 1, then 2 (the same two starts, not 1 + 2)
    rated[0]!.observeAnswer(key, 200, { 'ratelimit-policy': policy, ratelimit: '"sim";r=5;t=2' }, false)
    // in the API's order (answers read out of it count a start twice: fewer starts, never more)
    await written(prefix, 'lg')
    rated[1]!.observeAnswer(key, 200, { 'ratelimit-policy': policy, ratelimit: '"sim";r=4;t=2' }, false)
    // a start the gate counted when it was taken is not counted again with its answer
    rated[0]!.observeAnswer(key, 200, { 'ratelimit-policy': policy, ratelimit: '"sim";r=3;t=2' }, false, true)
    await written(prefix, 'le')
    await new Promise((r) => setTimeout(r, 100))
    const params = gcraParams({ requests: 6, windowMs: 2000, burst: 6 })
    let granted = 0
    for (let i = 0; i < 8; i++) if ((await gates[i % 2]!.reserve(key, params, 0)).granted) granted++
    // 6 per window, 2 sent before the gate knew the rate: 4 more now, on either replica, and not one more
    expect(granted).toBe(4)
  })
})
