import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminJson, startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth, keyStats, startSim, type Sim } from '../support/sim.js'
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

let production: Sim
let trial: Sim
let proxy: RunningProxy
beforeAll(async () => {
  production = await startSim()
  trial = await startSim()
  proxy = await startProxy({
    upstream: production.apiUrl,
    requestLog: false,
    redis: { url: redis.url, keyPrefix: uniquePrefix('upstreams') },
    upstreams: [{ name: 'trial', prefix: '/trial/v2', url: trial.apiUrl, profile: 'neon-v2' }],
  })
})
afterAll(async () => {
  await proxy.close()
  await production.close()
  await trial.close()
})

describe('another upstream\'s keys in Redis', () => {
  it('production and trial each hold the one permit of POST /accounts/search for org 1001; /status reads them back apart', async () => {
    const held = (gate: string) => ({ method: 'POST', headers: { authorization: basicAuth('1001'), 'x-sim-hold': gate }, body: '{}' })
    const p = send(proxy.url, '/v2/accounts/search', held('r'))
    const t = send(proxy.url, '/trial/v2/accounts/search', held('r'))
    await until(() => keyStats(production, '1001', 'POST /accounts/search')?.inProgress === 1 && keyStats(trial, '1001', 'POST /accounts/search')?.inProgress === 1, 'both in progress')
    const status = await adminJson<{ backend: string; keys: Key[] }>(proxy, '/status')
    expect(status.backend).toBe('redis')
    const rows = status.keys.filter((k) => k.endpoint === 'POST /accounts/search').map(({ upstream, instance, inFlight, queued }) => ({ upstream, instance, inFlight, queued }))
    expect(rows.sort((a, b) => (a.upstream ?? '').localeCompare(b.upstream ?? ''))).toEqual([
      { upstream: undefined, instance: '1001', inFlight: 1, queued: 0 },
      { upstream: 'trial', instance: '1001', inFlight: 1, queued: 0 },
    ])
    production.open('r')
    trial.open('r')
    expect((await Promise.all([p, t])).map((a) => a.status)).toEqual([200, 200])
  })
})
