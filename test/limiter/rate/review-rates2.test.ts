/** Cold review of rates2 (273537b): deterministic, in process. */
import { describe, expect, it } from 'vitest'
import { MemoryRateGate } from '../../../src/limiter/rate/gate.js'
import type { GcraParams } from '../../../src/limiter/rate/gcra.js'
import { RatedLimiter } from '../../../src/limiter/rate/limiter.js'
import type { Limiter } from '../../../src/limiter/types.js'

const key = { instance: 'org1', endpoint: 'GET /contacts' }

describe('review rates2: a published RateLimit remaining', () => {
  it.each([
    ['RateLimit', { 'ratelimit-policy': '"default";q=10;w=10', ratelimit: '"default";r=2;t=9' }],
    ['X-RateLimit', { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '2', 'x-ratelimit-reset': '9' }],
  ])('%s: the first answer says 8 of 10 are used in the window: at most 2 more start before it ends', (_, headers) => {
    let now = 0
    let learned: GcraParams | undefined
    const gate = new (class extends MemoryRateGate {
      override learn(k: typeof key, p: GcraParams, ttl: number): void {
        learned = p
        super.learn(k, p, ttl)
      }
    })(() => now)
    const spy = gate
    const rated = new RatedLimiter(
      {} as Limiter,
      spy,
      { enabled: true, idleMs: 60_000, marginMs: 0 },
      undefined,
      () => now,
    )
    // sent before the rate was known (not counted by the gate); the API has counted 8 in its window
    rated.observeAnswer(key, 200, headers, false, false)
    expect(learned).toBeDefined()
    now = 10
    let more = 0
    while (gate.reserve(key, learned!, 0).granted) more++
    // on 273537b: evidence.used (8) is read and never used; only this answer's own start is synced: 9 more go
    expect(more).toBeLessThanOrEqual(2)
  })
})

describe('review rates2: two limits, one learner', () => {
  it("the throttle that finds a rate is the rate's (returns true) also when the gate counts accepted starts (Redis)", () => {
    const results: boolean[] = []
    for (const shared of [false, true]) {
      let now = 0
      const gate = new (class extends MemoryRateGate {})(() => now)
      if (shared)
        Object.assign(gate, {
          countAccepted: () => undefined,
          acceptedWithin: () => Promise.resolve(undefined), // as RedisRateGate: a round trip
        })
      const rated = new RatedLimiter(
        {} as Limiter,
        gate,
        { enabled: true, idleMs: 60_000, marginMs: 0 },
        undefined,
        () => now,
      )
      rated.observeAnswer(key, 429, { 'retry-after': '1' }, true)
      now = 1200
      for (let i = 0; i < 5; i++) rated.observeAnswer(key, 200, {}, false)
      now = 1800
      results.push(rated.observeAnswer(key, 429, { 'retry-after': '1' }, true))
    }
    // in process: true (the 429 is the rate's, the concurrency learner does not count it); through Redis: false
    expect(results).toEqual([true, true])
  })
})
