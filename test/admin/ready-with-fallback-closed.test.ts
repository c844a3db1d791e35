import { describe, expect, it } from 'vitest'
import { startProxy } from '../support/proxy.js'
import { basicAuth, withSim } from '../support/sim.js'
import { send, until } from '../support/http.js'
import { useRedis } from '../support/use-redis.js'
import { uniquePrefix } from '../support/redis.js'

const redis = useRedis()

// Redis lost with `redis.fallback: closed` is the same on every replica at once: a failing /readyz
// would take every pod out of the Service (apps get connection refused) and the PDB would block node
// drains. A replica that has reached Redis stays Ready and answers 503 + Retry-After itself
// (docs/redis-limiter.md, "Failure modes").
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  'fallback closed, Redis lost after start: Ready, and sluice answers 503 + Retry-After itself',
  () => {
    it('keeps /readyz 200 and refuses the request with SLUICE_UNAVAILABLE', async () => {
      const sim = await withSim()
      const proxy = await startProxy({
        upstream: sim.apiUrl,
        redis: { url: redis.url, fallback: 'closed', keyPrefix: uniquePrefix('ready-closed') },
      })
      try {
        expect(proxy.app.limiter.mode()).toBe('redis')
        expect((await fetch(`${proxy.adminUrl}/readyz`)).status).toBe(200)

        await redis.stop()
        await until(() => proxy.app.limiter.mode() === 'closed', 'the limiter falls back to closed', 20_000)
        const ready = await fetch(`${proxy.adminUrl}/readyz`)
        expect(ready.status).toBe(200)
        expect(await ready.json()).toEqual({ ready: true, mode: 'closed', closing: false })

        const answer = await send(proxy.url, '/v2/accounts/search', {
          method: 'POST',
          headers: { authorization: basicAuth('org1') },
          body: '{}',
        })
        expect(answer.status).toBe(503)
        expect(answer.headers['retry-after']).toBe('1')
        expect(answer.json()).toEqual([
          { code: 'SLUICE_UNAVAILABLE', message: 'Redis is unreachable and the limiter fallback is closed' },
        ])
        expect(sim.stats().keys).toEqual({})
      } finally {
        await proxy.close()
      }
    }, 60_000)
  },
)
