import { once } from 'node:events'
import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats, withSim } from '../support/sim.js'
import { spawnProxy } from '../support/process.js'
import { send, until } from '../support/http.js'
import { uniquePrefix } from '../support/redis.js'
import { useRedis } from '../support/use-redis.js'

const redis = useRedis()
const SEARCH = 'POST /accounts/search' // limit 1
// keep-alive clients: each answer after SIGTERM must close its connection, so the next request goes to a replica that stays
const search = (extra: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { authorization: basicAuth('org1'), connection: 'keep-alive', ...extra },
  body: '{}',
})

// A drain is sluice's normal life (rollouts, node drains, scale-in): the queue keeps its place and is
// served, in process as in the Redis queue shared with the other replicas (docs/deploy.md, "Graceful shutdown").
describe.each([
  ['in-process', () => ({})],
  ['Redis', () => ({ SLUICE_REDIS_URL: redis.url, SLUICE_REDIS_KEY_PREFIX: uniquePrefix('drain') })],
])('SIGTERM with a queue (%s limiter): not ready, the queued are served, then exit 0', (_name, env) => {
  it('serves the in-flight and the queued requests, refuses none', async () => {
    const sim = await withSim()
    const proxy = await spawnProxy({ SLUICE_UPSTREAM: sim.apiUrl, ...env() })
    const inFlight = send(proxy.url, '/v2/accounts/search', search({ 'x-sim-hold': 'first' }))
    await until(() => keyStats(sim, 'org1', SEARCH)?.inProgress === 1, 'one request upstream')
    const queued = [send(proxy.url, '/v2/accounts/search', search()), send(proxy.url, '/v2/accounts/search', search())]
    const queuedNow = async (): Promise<number | undefined> =>
      ((await (await fetch(`${proxy.adminUrl}/status`)).json()) as { keys: { queued: number }[] }).keys[0]?.queued
    await until(async () => (await queuedNow()) === 2, 'two queued')

    const exited = once(proxy.child, 'exit') as Promise<[number | null]>
    proxy.child.kill('SIGTERM')
    await until(async () => (await fetch(`${proxy.adminUrl}/readyz`)).status === 503, '/readyz 503 after SIGTERM')
    expect(await (await fetch(`${proxy.adminUrl}/readyz`)).json()).toMatchObject({ ready: false, closing: true })
    // still waiting in their queue, not refused
    expect(await queuedNow()).toBe(2)

    sim.open('first')
    const answers = await Promise.all([inFlight, ...queued])
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200])
    expect(answers.map((a) => a.headers.connection)).toEqual(['close', 'close', 'close'])
    const [code] = await exited
    expect(code).toBe(0)
    expect(keyStats(sim, 'org1', SEARCH)).toMatchObject({ requests: 3, inProgress: 0, maxInProgress: 1 })
    await expect(send(proxy.url, '/v2/campaigns')).rejects.toThrow(/ECONNREFUSED/)
  }, 60_000)
})
