/**
 * A key with no rate costs nothing over the backend (docs/redis-limiter.md, "Rates", cost): while no answer
 * has taught anything, a free key's permit comes back as the backend gives it, with no promise step of the
 * rate limiter's own (a `.then` per request). Timed figures are the bench's (`npm run bench -- rates`).
 */
import { describe, expect, it } from 'vitest'
import { createMemoryLimiter } from '../../../src/limiter/memory/index.js'
import { MemoryRateGate } from '../../../src/limiter/rate/gate.js'
import { RatedLimiter } from '../../../src/limiter/rate/limiter.js'
import type { Limiter } from '../../../src/limiter/types.js'

const key = { instance: 'org1', endpoint: 'GET /contacts' }
const learning = { enabled: true, idleMs: 60_000, marginMs: 0 }
const options = { limit: 5, deadline: Date.now() + 60_000, maxQueue: 100 }

/** In which order a permit of `limiter` and two plain promise steps queued after the call settle. */
async function orderOf(limiter: Limiter): Promise<string[]> {
  const order: string[] = []
  const granted = limiter.acquire(key, options).then((p) => {
    order.push('permit')
    p.release('success')
  })
  const ticks = Promise.resolve()
    .then(() => order.push('tick 1'))
    .then(() => order.push('tick 2'))
  await Promise.all([granted, ticks])
  return order
}

describe('a key without a rate', () => {
  it('a free key’s permit settles when the backend’s does: no step of the rate limiter between', async () => {
    const bare = createMemoryLimiter({})
    const rated = new RatedLimiter(createMemoryLimiter({}), new MemoryRateGate(), learning, undefined)
    expect(await orderOf(rated)).toEqual(await orderOf(bare))
    await bare.close()
    await rated.close()
  })
})
