import { describe, expect, it } from 'vitest'
import { gcraParams, HOLD_ONLY } from '../../../src/limiter/rate/gcra.js'
import { RedisRateGate } from '../../../src/limiter/redis/index.js'
import type { RedisLimiter } from '../../../src/limiter/redis/index.js'
import { useRedis } from '../../support/use-redis.js'
import { closeAll, key, memoryLog, redisLimiter, testSettings } from './helpers.js'

const redis = useRedis()

const gateOf = (limiter: RedisLimiter, prefix: string): RedisRateGate =>
  new RedisRateGate(
    {
      scripts: limiter.scripts,
      keyPrefix: prefix,
      mode: () => limiter.mode(),
      replicas: () => limiter.replicas(),
      settleMs: 2_000,
    },
    memoryLog(),
  )

describe('redis rate gate: start times shared by every replica', () => {
  it('two replicas reserving in turn get one spacing between them, and the key expires', async () => {
    const settings = testSettings(redis.url)
    const a = await redisLimiter(settings, { replicaId: 'a' })
    const b = await redisLimiter(settings, { replicaId: 'b' })
    const gates = [gateOf(a, settings.keyPrefix), gateOf(b, settings.keyPrefix)]
    // 4 per 2 s, burst 2: interval 2000 / 3 → 667 ms, tolerance 667 ms
    const params = gcraParams({ requests: 4, windowMs: 2000, burst: 2 })
    const delays: number[] = []
    for (let i = 0; i < 6; i++) delays.push((await gates[i % 2]!.reserve(key, params, 60_000)).delayMs)
    // Redis's clock moved a little between the calls: each delay is the rule's within that
    const expected = [0, 0, 667, 1334, 2001, 2668]
    delays.forEach((d, i) => expect(Math.abs(d - expected[i]!), `reservation ${i}: ${d}`).toBeLessThan(200))
    // refused past the longest wait, and nothing reserved
    const refused = await gates[0]!.reserve(key, params, 100)
    expect(refused.granted).toBe(false)
    const inspect = redis.client()
    const [rateKey] = await inspect.keys(`${settings.keyPrefix}:*:rate`)
    expect(rateKey).toBeDefined()
    const ttl = await inspect.pttl(rateKey!)
    expect(ttl).toBeGreaterThan(0)
    // a window (2 s) past its TAT: a replica that started within it tells a lost key from an idle one
    expect(ttl).toBeLessThanOrEqual(6_000)
    await closeAll([a, b])
  })

  it('a hold one replica learned keeps the other back', async () => {
    const settings = testSettings(redis.url)
    const a = await redisLimiter(settings, { replicaId: 'a' })
    const b = await redisLimiter(settings, { replicaId: 'b' })
    const params = gcraParams({ requests: 100, windowMs: 1000, burst: 100 })
    gateOf(a, settings.keyPrefix).hold(key, 5_000, params)
    const inspect = redis.client()
    // the hold is written without waiting for it: wait until Redis has it
    for (let i = 0; i < 100 && (await inspect.keys(`${settings.keyPrefix}:*:rate`)).length === 0; i++)
      await new Promise((r) => setTimeout(r, 20))
    const r = await gateOf(b, settings.keyPrefix).reserve(key, params, 60_000)
    expect(r.delayMs).toBeGreaterThan(4_000)
    await closeAll([a, b])
  })

  it('a hold written alone (HOLD_ONLY) lets no burst out at its end: one start, the next an interval later', async () => {
    const settings = testSettings(redis.url)
    const a = await redisLimiter(settings, { replicaId: 'a' })
    const gate = gateOf(a, settings.keyPrefix)
    // 10 per 10 s, burst 5: interval 1,667 ms, so the loop below cannot reach the next start
    const params = gcraParams({ requests: 10, windowMs: 10_000, burst: 5 })
    gate.hold(key, 300, HOLD_ONLY)
    const inspect = redis.client()
    for (let i = 0; i < 100 && (await inspect.keys(`${settings.keyPrefix}:*:rate`)).length === 0; i++)
      await new Promise((r) => setTimeout(r, 20))
    // past the hold's end: the key is still there (a fresh key's hold used to expire with it)
    await new Promise((r) => setTimeout(r, 400))
    let together = 0
    while (together < 10 && (await gate.reserve(key, params, 0)).granted) together++
    expect(together).toBe(1)
    await closeAll([a])
  })

  it('burst = requests, a sliding log: N at once on two replicas, N again a window later, a start given back reused', async () => {
    const settings = testSettings(redis.url)
    const a = await redisLimiter(settings, { replicaId: 'a' })
    const b = await redisLimiter(settings, { replicaId: 'b' })
    const gates = [gateOf(a, settings.keyPrefix), gateOf(b, settings.keyPrefix)]
    const params = gcraParams({ requests: 4, windowMs: 2000, burst: 4 })
    const delays: number[] = []
    for (let i = 0; i < 8; i++) delays.push((await gates[i % 2]!.reserve(key, params, 60_000)).delayMs)
    const expected = [0, 0, 0, 0, 2000, 2000, 2000, 2000]
    delays.forEach((d, i) => expect(Math.abs(d - expected[i]!), `reservation ${i}: ${d}`).toBeLessThan(200))
    // the next one a window after those; one taken and given back frees its place
    const other = { ...key, endpoint: 'GET /other' }
    const taken = await gates[0]!.reserve(other, params, 0)
    gates[0]!.giveBack(other, params, taken.tat!)
    await new Promise((r) => setTimeout(r, 50))
    for (let i = 0; i < 4; i++) expect((await gates[1]!.reserve(other, params, 0)).granted).toBe(true)
    expect((await gates[1]!.reserve(other, params, 0)).granted).toBe(false)
    await closeAll([a, b])
  })
})
