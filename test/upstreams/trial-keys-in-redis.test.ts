import { describe, expect, it } from 'vitest'
import { adminJson } from '../support/proxy.js'
import { basicAuth, keyStats } from '../support/sim.js'
import { useTrialStack } from './trial-stack.js'
import { send, until } from '../support/http.js'
import { useRedis } from '../support/use-redis.js'
import { uniquePrefix } from '../support/redis.js'

/*
 * With the Redis backend, another upstream's keys are their own semaphores too (docs/upstreams.md,
 * "Keys"): one org id on production and on trial holds a permit on each, across replicas.
 */

const redis = useRedis()

interface Key {
  upstream?: string
  instance: string
  endpoint: string
  inFlight: number
  queued: number
}

const stack = useTrialStack(() => ({ redis: { url: redis.url, keyPrefix: uniquePrefix('upstreams') } }))

describe("another upstream's keys in Redis", () => {
  it('production and trial each hold the one permit of POST /accounts/search for org 1001; /status reads them back apart', async () => {
    const held = (gate: string) => ({
      method: 'POST',
      headers: { authorization: basicAuth('1001'), 'x-sim-hold': gate },
      body: '{}',
    })
    const p = send(stack.proxy.url, '/v2/accounts/search', held('r'))
    const t = send(stack.proxy.url, '/trial/v2/accounts/search', held('r'))
    await until(
      () =>
        keyStats(stack.production, '1001', 'POST /accounts/search')?.inProgress === 1 &&
        keyStats(stack.trial, '1001', 'POST /accounts/search')?.inProgress === 1,
      'both in progress',
    )
    const status = await adminJson<{ backend: string; keys: Key[] }>(stack.proxy, '/status')
    expect(status.backend).toBe('redis')
    const rows = status.keys
      .filter((k) => k.endpoint === 'POST /accounts/search')
      .map(({ upstream, instance, inFlight, queued }) => ({ upstream, instance, inFlight, queued }))
    expect(rows.sort((a, b) => (a.upstream ?? '').localeCompare(b.upstream ?? ''))).toEqual([
      { upstream: undefined, instance: '1001', inFlight: 1, queued: 0 },
      { upstream: 'trial', instance: '1001', inFlight: 1, queued: 0 },
    ])
    stack.production.open('r')
    stack.trial.open('r')
    expect((await Promise.all([p, t])).map((a) => a.status)).toEqual([200, 200])
  })
})
