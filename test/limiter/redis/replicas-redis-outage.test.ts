import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnProxy, type ProxyProcess } from '../../support/process.js'
import { adminJson } from '../../support/proxy.js'
import { send, until } from '../../support/http.js'
import { startRedis, uniquePrefix, type TestRedis } from '../../support/redis.js'
import { basicAuth, startSim, type Sim } from '../../support/sim.js'

/** Three proxy replicas (`node dist/main.js`, built by `npm test`) lose their Redis under load, then get it back. */

let redis: TestRedis
let sim: Sim
let replicas: ProxyProcess[]

beforeAll(async () => {
  if (process.env.SLUICE_TEST_REDIS_URL) return
  redis = await startRedis()
  sim = await startSim({ latencyMs: 5 })
  const env = {
    SLUICE_UPSTREAM: sim.apiUrl,
    SLUICE_REDIS_URL: redis.url,
    SLUICE_REDIS_KEY_PREFIX: uniquePrefix('outage'),
    SLUICE_REDIS_LEASE_MS: '1500',
    SLUICE_REDIS_FALLBACK: 'local',
    SLUICE_REQUEST_LOG: 'false',
  }
  replicas = await Promise.all([1, 2, 3].map(() => spawnProxy(env)))
}, 60_000)

afterAll(async () => {
  await Promise.all((replicas ?? []).map((r) => r.stop()))
  await sim?.close()
  await redis?.close()
})

const modes = (): Promise<string[]> => Promise.all(replicas.map(async (r) => (await adminJson<{ mode: string }>(r, '/readyz')).mode))

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)('three replicas when Redis stops under load and starts again', () => {
  it('no replica dies, every request is answered, the mode goes to the fallback and back', async () => {
    expect(await modes()).toEqual(['redis', 'redis', 'redis'])
    let running = true
    const statuses = new Map<number, number>()
    const clients = Array.from({ length: 30 }, async (_, client) => {
      const replica = replicas[client % 3]!
      while (running) {
        const answer = await send(replica.url, client % 2 ? '/v2/accounts/search' : '/v2/donations/3', {
          method: client % 2 ? 'POST' : 'GET',
          headers: { authorization: basicAuth(`org${client % 2}`) },
          body: client % 2 ? '{}' : undefined,
        })
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
      }
    })
    const answered = (): number => [...statuses.values()].reduce((a, b) => a + b, 0)

    await until(() => answered() > 50, 'traffic through Redis')
    await redis.stop()
    await until(async () => (await modes()).every((m) => m === 'local'), 'every replica in the local fallback')
    const before = answered()
    await until(() => answered() > before + 50, 'traffic through the fallback')
    await redis.start()
    await until(async () => (await modes()).every((m) => m === 'redis'), 'every replica back on Redis', 15_000)
    const back = answered()
    await until(() => answered() > back + 50, 'traffic through Redis again')
    running = false
    await Promise.all(clients)

    expect(Object.fromEntries(statuses)).toEqual({ 200: answered() })
    for (const replica of replicas) expect(replica.child.exitCode).toBeNull()
    for (const replica of replicas) {
      await until(async () => (await adminJson<{ keys: unknown[] }>(replica, '/status')).keys.length === 0, 'no permit left')
    }
  })
})
