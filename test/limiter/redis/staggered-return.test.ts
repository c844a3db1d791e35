import { afterEach, describe, expect, it } from 'vitest'
import type { RedisLimiter } from '../../../src/limiter/redis/index.js'
import type { Permit, PermitKey } from '../../../src/limiter/types.js'
import { needs } from '../../support/tools.js'
import { useRedis } from '../../support/use-redis.js'
import { cuttable, type Cuttable } from './cuttable.js'
import { closeAll, eventually, heardByAll, opts, redisLimiter, sleep, testSettings } from './helpers.js'

// Two replicas lose Redis and get it back at different moments (docs/redis-limiter.md, "Failure
// modes", "Redis answers again"): the one back first must not grant through Redis the slot that the
// other, still in `local`, fills from its share (Redis cannot count that permit yet).

const redis = useRedis()
let lines: Cuttable[] = []
let limiters: RedisLimiter[] = []
afterEach(async () => {
  await closeAll(limiters)
  await Promise.all(lines.map((l) => l.close()))
  limiters = []
  lines = []
})

const outOfRedis = async (l: RedisLimiter): Promise<boolean> => {
  await l.status().catch(() => undefined) // a script notices the cut at once
  return l.mode() === 'local'
}

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `replicas back from an outage one after the other ${needs('redis-server')}`,
  () => {
    it('never hold more than the limit of a key between them, in the local share or through Redis', async () => {
      lines = [await cuttable(redis), await cuttable(redis)]
      const prefix = testSettings(redis.url).keyPrefix
      const settings = lines.map((line) => testSettings(line.url, { keyPrefix: prefix, leaseMs: 1_500 }))
      limiters = [
        await redisLimiter(settings[0]!, { replicaId: 'early' }),
        await redisLimiter(settings[1]!, { replicaId: 'late' }),
      ]
      const [early, late] = limiters as [RedisLimiter, RedisLimiter]
      await eventually(() => limiters.every((l) => l.replicas() === 2), 5_000, 'both seeing two')
      await heardByAll(redis.client(), prefix, 2) // both take their slots only then

      for (const line of lines) line.cut()
      await eventually(async () => (await outOfRedis(early)) && (await outOfRedis(late)), 5_000, 'both in local')

      // a limit-1 key whose only slot is the late replica's in `local`
      const k = Array.from({ length: 40 }, (_, i): PermitKey => ({ instance: `org${i}`, endpoint: 'POST /x' })).find(
        (x) => late.heard.shareOf(x, 1) === 1,
      )!
      let held = 0
      let most = 0
      const served = new Map<RedisLimiter, number>()
      let running = true
      const loop = async (l: RedisLimiter): Promise<void> => {
        while (running) {
          const permit: Permit | undefined = await l.acquire(k, opts(1, { deadlineMs: 30_000 })).catch(() => undefined)
          if (!permit) continue
          most = Math.max(most, ++held)
          served.set(l, (served.get(l) ?? 0) + 1)
          await sleep(20) // upstream
          held--
          permit.release()
        }
      }
      const clients = [loop(late), loop(late), loop(early), loop(early)]
      await sleep(200) // the late replica serves the key from its share; the early one's clients wait

      lines[0]!.restore()
      await eventually(() => early.mode() === 'redis', 10_000, 'the early replica back on Redis')
      await sleep(300) // less than two heartbeats (1 s): the late replica is not given up
      lines[1]!.restore()
      await eventually(() => late.mode() === 'redis', 10_000, 'the late replica back on Redis')
      const early0 = served.get(early) ?? 0
      await eventually(() => (served.get(early) ?? 0) > early0 + 5, 5_000, 'the early replica serving the key too')
      running = false
      await Promise.all(clients)
      expect(most, 'permits of the limit-1 key held at once').toBe(1)
    })
  },
)
