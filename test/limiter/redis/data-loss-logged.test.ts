import { afterEach, describe, expect, it } from 'vitest'
import { createRedisLimiter, type RedisLimiter } from '../../../src/limiter/redis/index.js'
import type { SluicePermit } from '../../../src/limiter/redis/ticket.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, memoryLog, opts, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

// When a sync finds that Redis lost its data (a restart without persistence, a failover to an empty
// replica), the replica says so once per key — how many permits in flight it counted again (their
// requests upstream) and how many it gave back unsent — also when every one of them was unsent
// (docs/redis-limiter.md, "Failure modes").

const MESSAGE =
  'limiter: Redis had lost its data; the permits in flight were counted again, those not sent yet given back'
const redis = useRedis()
let limiters: RedisLimiter[] = []
afterEach(async () => {
  await closeAll(limiters)
  limiters = []
})

async function afterDataLoss(sent: boolean[]) {
  const log = memoryLog()
  const limiter = await createRedisLimiter(testSettings(redis.url, { leaseMs: 600 }), { log, replicaId: 'a' })
  limiters = [limiter]
  const permits: SluicePermit[] = []
  for (const s of sent) {
    const permit = (await limiter.acquire(key, opts(sent.length))) as SluicePermit
    if (s) permit.markSent()
    permits.push(permit)
  }
  await redis.client().flushall()
  await eventually(
    () => log.lines.some((l) => l.msg.startsWith('limiter: Redis had lost its data')),
    5_000,
    'the next sync',
  )
  for (const p of permits) p.release()
  return log.lines.filter((l) => l.msg.startsWith('limiter: Redis had lost its data'))
}

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(`the loss of Redis data, logged ${needs('redis-server')}`, () => {
  it('every permit unsent: logged, none counted again, one given back', async () => {
    expect(await afterDataLoss([false])).toEqual([
      { level: 'warn', obj: { instance: 'org1', endpoint: key.endpoint, count: 0, heldBack: 1 }, msg: MESSAGE },
    ])
  })

  it('one sent, one unsent: one counted again, one given back', async () => {
    expect(await afterDataLoss([true, false])).toEqual([
      { level: 'warn', obj: { instance: 'org1', endpoint: key.endpoint, count: 1, heldBack: 1 }, msg: MESSAGE },
    ])
  })
})
