import { describe, expect, it } from 'vitest'
import { FairShare } from '../../../src/limiter/fairness/policy.js'
import { fairnessSettingsSchema } from '../../../src/limiter/fairness/settings.js'
import type { RedisLimiter } from '../../../src/limiter/redis/index.js'
import type { Limiter, Permit } from '../../../src/limiter/types.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, eventually, key, opts, redisLimiter, testSettings } from './helpers.js'

// Fair share between apps across replicas: three limiters on one real redis-server, each its own
// replica (own connections, own id). Assertions are on order and counts, never on wall time.

const redis = useRedis()
const tick = (): Promise<void> => new Promise((r) => setImmediate(r))

async function replicas(fairness: unknown = {}): Promise<RedisLimiter[]> {
  const settings = testSettings(redis.url, { leaseMs: 3_000 })
  const share = new FairShare(fairnessSettingsSchema.parse(fairness))
  return Promise.all([0, 1, 2].map((i) => redisLimiter(settings, { replicaId: `fair${i}`, fairness: share })))
}

async function queuedOn(limiter: Limiter, count: number): Promise<void> {
  await eventually(async () => ((await limiter.status()).keys[0]?.queued ?? 0) === count, 10_000, `${count} queued`)
}

describe('redis limiter: fair share between apps across replicas', () => {
  it('weights 3:1 across replicas: 3 grants to 1 over a long backlog, FIFO within each app', async () => {
    const [a, b, c] = await replicas({ apps: { heavy: { weight: 3 } } })
    const order: string[] = []
    const holder = await a!.acquire(key, opts(1, { app: 'first' }))
    const all: Promise<void>[] = []
    const wait = (limiter: Limiter, label: string): void => {
      const app = label.split('#')[0]
      all.push(
        limiter.acquire(key, opts(1, { app, deadlineMs: 60_000 })).then(async (permit) => {
          order.push(label)
          await tick()
          permit.release() // one at a time: the order recorded is the order Redis granted in
        }),
      )
    }
    for (let i = 0; i < 30; i++) {
      wait(b!, `heavy#${i}`) // heavy from one replica,
      wait(i % 2 === 0 ? a! : c!, `light#${i}`) // light from the two others
    }
    await queuedOn(a!, 60)
    holder.release()
    await Promise.all(all)
    const first40 = order.slice(0, 40)
    expect(first40.filter((l) => l.startsWith('heavy')).length, first40.join(' ')).toBe(30)
    // FIFO within an app in the order Redis saw the requests: one replica's are sent in order on one
    // connection, two replicas' race each other to Redis
    for (const [app, parity] of [
      ['heavy', 0],
      ['heavy', 1],
      ['light', 0],
      ['light', 1],
    ] as const) {
      const mine = order
        .filter((l) => l.startsWith(app))
        .map((l) => Number(l.split('#')[1]))
        .filter((i) => app === 'heavy' || i % 2 === parity)
      expect(mine).toEqual([...mine].sort((x, y) => x - y))
    }
    await closeAll([a!, b!, c!])
  })

  it("a flooding app cannot push another app's wait far: each of its requests waits behind a grant or two of the flood, not the flood", async () => {
    const [a, b, c] = await replicas()
    let batchGrants = 0
    let flooding = true
    // 24 batch requests kept waiting at all times, from two replicas
    const loop = async (limiter: Limiter): Promise<void> => {
      while (flooding) {
        const permit: Permit = await limiter.acquire(key, opts(1, { app: 'batch', deadlineMs: 60_000 }))
        batchGrants++
        await tick()
        permit.release()
      }
    }
    const loops = Array.from({ length: 24 }, (_, i) => loop(i % 2 === 0 ? b! : c!))
    await eventually(() => batchGrants >= 30, 20_000, 'the flood flowing')
    const passedBy: number[] = []
    for (let i = 0; i < 10; i++) {
      const before = batchGrants
      const permit = await a!.acquire(key, opts(1, { app: 'web', deadlineMs: 60_000 }))
      passedBy.push(batchGrants - before)
      permit.release()
      const after = batchGrants
      await eventually(() => batchGrants >= after + 3, 20_000, 'a few batch grants between web requests')
    }
    flooding = false
    await Promise.all(loops)
    // First come, first served would put each web request behind the whole flood (about 24). Fair
    // share puts it next after the permit in use (a handover crossing its arrival may let one more
    // go); what the test counts also includes grants still on their way to it when it asked.
    expect(Math.max(...passedBy), passedBy.join(' ')).toBeLessThanOrEqual(5)
    expect(
      passedBy.reduce((x, y) => x + y, 0),
      passedBy.join(' '),
    ).toBeLessThanOrEqual(25)
    await closeAll([a!, b!, c!])
  })

  it('maxHeld holds across replicas: an app never holds more than its cap, while others use the rest', async () => {
    const [a, b, c] = await replicas({ apps: { batch: { maxHeld: 2, maxQueued: 1000 } } })
    let batchHeld = 0
    let batchMax = 0
    let total = 0
    let totalMax = 0
    const run = async (limiter: Limiter, app: string, times: number): Promise<void> => {
      for (let i = 0; i < times; i++) {
        const permit = await limiter.acquire(key, opts(5, { app, deadlineMs: 60_000 }))
        total++
        totalMax = Math.max(totalMax, total)
        if (app === 'batch') batchMax = Math.max(batchMax, ++batchHeld)
        await tick()
        if (app === 'batch') batchHeld--
        total--
        permit.release()
      }
    }
    await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => run([a!, b!, c!][i % 3]!, 'batch', 15)),
      ...Array.from({ length: 4 }, (_, i) => run([a!, b!, c!][i % 3]!, 'web', 15)),
    ])
    expect(batchMax).toBe(2)
    expect(totalMax).toBeLessThanOrEqual(5)
    await closeAll([a!, b!, c!])
  })
})
