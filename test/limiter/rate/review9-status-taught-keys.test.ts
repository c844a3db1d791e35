/**
 * review9: `/status` lists each key whose rate answers taught once. Before RateTeachings, two or more
 * such keys with no configured rate looped forever: the walk over the taught keys (an LRU map) read
 * each one again inside the walk, and that read moves it to the end.
 */
import { describe, expect, it, onTestFinished } from 'vitest'
import { createMemoryLimiter } from '../../../src/limiter/memory/index.js'
import { MemoryRateGate } from '../../../src/limiter/rate/gate.js'
import { RatedLimiter } from '../../../src/limiter/rate/limiter.js'

const learning = { enabled: true, idleMs: 60_000, marginMs: 0 }
const published = { 'ratelimit-policy': '"q";q=10;w=1', ratelimit: '"q";r=9;t=1' }

describe('review9: /status with keys whose rates answers taught', () => {
  for (const n of [1, 2, 3]) {
    it(`/status lists ${n} taught key(s), each once`, async () => {
      const now = 0
      const limiter = new RatedLimiter(
        createMemoryLimiter({}),
        new MemoryRateGate(() => now),
        learning,
        undefined,
        () => now,
      )
      onTestFinished(() => limiter.close())
      const keys = Array.from({ length: n }, (_, i) => ({ instance: 'org1', endpoint: `GET /k${i}` }))
      for (const k of keys) limiter.observeAnswer(k, 200, published, false)
      const status = await Promise.race([
        limiter.status(),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('status() did not return')), 2000)),
      ])
      const listed = (status.rates ?? []).map((r) => r.endpoint).sort()
      expect(listed).toEqual(keys.map((k) => k.endpoint).sort())
    })
  }
})
