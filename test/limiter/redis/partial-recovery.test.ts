import { afterEach, describe, expect, it } from 'vitest'
import { semaphoreKeysOf, tagOf } from '../../../src/limiter/redis/keys.js'
import type { PermitKey } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { cuttable, type Cuttable } from './cuttable.js'
import { eventually, heardByAll, opts, redisLimiter, sleep, testSettings } from './helpers.js'

const redis = useRedis()
const A: PermitKey = { instance: 'org1', endpoint: 'POST /accounts/search' }
const B: PermitKey = { instance: 'org2', endpoint: 'POST /accounts/search' }

let line: Cuttable | undefined
afterEach(async () => {
  await line?.close()
  line = undefined
})

describe('redis limiter: recovery when one key is broken in Redis', () => {
  it('a permit adopted for one key while another key failed leaves no local slot behind', async () => {
    line = await cuttable(redis)
    const settings = testSettings(line.url, { fallback: 'local', leaseMs: 900 })
    const adoptFailures: number[] = []
    const limiter = await redisLimiter(settings, {
      observer: { redisCommand: (op, _s, ok) => void (op === 'adopt' && !ok && adoptFailures.push(1)) },
    })
    const inspect = redis.client()
    await heardByAll(inspect, settings.keyPrefix, 1) // it takes its local slots only then
    line.cut()
    await eventually(
      async () => {
        await limiter.status().catch(() => undefined)
        return limiter.mode() === 'local'
      },
      5_000,
      'local fallback',
    )
    const pa = await limiter.acquire(A, opts(1))
    const pb = await limiter.acquire(B, opts(1))
    // A's holders key of the wrong type: adopting A fails, adopting B succeeds
    const holdersA = semaphoreKeysOf(settings.keyPrefix, tagOf(A)).holders
    await inspect.set(holdersA, 'not a sorted set')
    line.restore()
    await eventually(() => adoptFailures.length > 0, 10_000, 'an adopt that failed')
    await inspect.del(holdersA)
    await eventually(() => limiter.mode() === 'redis', 10_000, 'back to redis')
    pa.release()
    pb.release()
    // B's release answered before the cut (else its id waits in `drops` and its key stays tracked:
    // a race of this test with its own cut, not what it checks)
    await eventually(() => limiter.tracked().keys === 0, 5_000, 'the releases answered')

    // the next outage: B's local slot must be free
    await heardByAll(inspect, settings.keyPrefix, 1) // back from a fall-back: a new run, its slots two heartbeats on
    // Back, it beats every 250 ms for 2L/3 beside its tick's beats; when the two overlap (one sent before
    // the other is answered) the run starts again, at the latest 2L/3 after the return, and its slots
    // come two heartbeats after that (docs/redis-limiter.md, "Failure modes"): L + 2L/3 covers it.
    await sleep(settings.leaseMs + (2 * settings.leaseMs) / 3)
    line.cut()
    await eventually(
      async () => {
        await limiter.status().catch(() => undefined)
        return limiter.mode() === 'local'
      },
      5_000,
      'local fallback again',
    )
    const again = await limiter.acquire(B, opts(1, { deadlineMs: 2_000 }))
    again.release()
    expect(limiter.tracked()).toMatchObject({ keys: 0, waiting: 0, pins: 0, unshared: 0 })
    await limiter.close()
  })

  it('one key of the wrong type does not keep the replica in its fallback: the others go through Redis, its own requests fail with 503', async () => {
    line = await cuttable(redis)
    const settings = testSettings(line.url, { fallback: 'local' })
    const limiter = await redisLimiter(settings)
    const inspect = redis.client()
    const holdersA = semaphoreKeysOf(settings.keyPrefix, tagOf(A)).holders
    await inspect.set(holdersA, 'not a sorted set')
    await expect(limiter.acquire(A, opts(1))).rejects.toMatchObject({ code: 'SLUICE_UNAVAILABLE', statusCode: 503 })
    expect(limiter.mode()).toBe('redis')
    const pb = await limiter.acquire(B, opts(1))
    expect(pb.lost.aborted).toBe(false)
    expect(await inspect.zcard(semaphoreKeysOf(settings.keyPrefix, tagOf(B)).holders)).toBe(1)
    pb.release()

    // granted locally during an outage, A cannot be counted in Redis once it is back: Redis serves the rest anyway
    await heardByAll(inspect, settings.keyPrefix, 1) // it takes its local slots only then
    line.cut()
    await eventually(
      async () => {
        await limiter.status().catch(() => undefined)
        return limiter.mode() === 'local'
      },
      5_000,
      'local fallback',
    )
    const pa = await limiter.acquire(A, opts(1))
    line.restore()
    await eventually(() => limiter.mode() === 'redis', 10_000, 'back to redis with A still broken')
    pa.release()
    await eventually(() => limiter.tracked().unshared === 0 && limiter.tracked().keys === 0, 5_000, 'nothing kept')
    await limiter.close()
  })
})
