import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startProxy } from '../support/proxy.js'
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.js'
import { basicAuth, withSim } from '../support/sim.js'
import { send } from '../support/http.js'

// A new pod whose Redis settings are wrong (here a rotated password; equally a Sentinel/TLS setting or
// a NetworkPolicy) never reaches Redis. With `fallback: closed` it must not be Ready, or a rollout
// replaces every serving pod with one that refuses everything (docs/redis-limiter.md, "Failure modes").
describe('fallback closed, Redis never reached since start', () => {
  let redis: TestRedis
  beforeAll(async () => {
    redis = await startRedis({ extraArgs: ['--requirepass', 'right-password'] })
  }, 30_000)
  afterAll(async () => redis?.close())

  it('answers /readyz 503 while it refuses every request', async () => {
    const sim = await withSim()
    const url = redis.url.replace('redis://', 'redis://:wrong-password@')
    const proxy = await startProxy({
      upstream: sim.apiUrl,
      redis: { url, fallback: 'closed', keyPrefix: uniquePrefix('wrong-pass') },
    })
    try {
      expect(proxy.app.limiter.mode()).toBe('closed')
      const answer = await send(proxy.url, '/v2/accounts/search', {
        method: 'POST',
        headers: { authorization: basicAuth('org1') },
        body: '{}',
      })
      expect(answer.status).toBe(503)
      const ready = await fetch(`${proxy.adminUrl}/readyz`)
      expect(ready.status).toBe(503)
      expect(await ready.json()).toMatchObject({ ready: false, mode: 'closed' })
    } finally {
      await proxy.close()
    }
  }, 60_000)
})
