import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats } from '../support/sim.js'
import { adminJson, useSimAndProxy } from '../support/proxy.js'
import { send } from '../support/http.js'

describe('a burst over the limit waits in the queue instead of getting 429s', () => {
  const stack = useSimAndProxy({ latencyMs: 3 }, { requestLog: false })

  it('50 concurrent POST /accounts/search for one instance: the API never sees 2 at once, no client sees a 429', async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        send(stack.proxy.url, '/v2/accounts/search', {
          method: 'POST',
          headers: { authorization: basicAuth('org1'), 'content-type': 'application/json' },
          body: '{"searchFields":[]}',
        }),
      ),
    )
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200))
    const stats = keyStats(stack.sim, 'org1', 'POST /accounts/search')
    expect(stats).toMatchObject({ limit: 1, maxInProgress: 1, requests: 50, rejected429: 0 })
    expect((await adminJson<{ keys: unknown[] }>(stack.proxy, '/status')).keys).toEqual([])
  })

  it('a mixed burst over limit-5 endpoints of two instances: each key stays at or under 5', async () => {
    stack.sim.reset()
    const paths = ['/v2/accounts/1/contacts', '/v2/donations/7', '/v2/campaigns']
    const answers = await Promise.all(
      // 100 ms each, so 15 requests per key overlap however slowly a busy machine sends them. Each
      // asks for another page: identical reads would share one call (README "Spending fewer permits").
      Array.from({ length: 90 }, (_, i) =>
        send(stack.proxy.url, `${paths[i % 3]!}?page=${i}`, {
          headers: { authorization: basicAuth(i % 2 ? 'org1' : 'org2'), 'x-sim-delay-ms': '100' },
        }),
      ),
    )
    expect(answers.filter((a) => a.status !== 200)).toEqual([])
    const keys = Object.values(stack.sim.stats().keys)
    expect(keys).toHaveLength(6)
    for (const k of keys) {
      expect(k.limit).toBe(5)
      expect(k.maxInProgress).toBeLessThanOrEqual(5)
      expect(k.rejected429).toBe(0)
    }
    // The queue did fill the limit: with 15 requests per key at once, each key reached 5 in progress.
    expect(keys.map((k) => k.maxInProgress)).toEqual(Array(6).fill(5))
  })
})
