import { describe, expect, it } from 'vitest'
import { createRedisLimiter, redisSettingsSchema } from '../../../src/limiter/redis/index.js'
import { adminJson, statusOf } from '../../support/proxy.js'
import { send, until } from '../../support/http.js'
import { spawnProxy } from '../../support/process.js'
import { leftInRedis } from '../../support/redis.js'
import { useRedisReplicas } from '../../support/replicas.js'
import { basicAuth, keyStats } from '../../support/sim.js'

/**
 * Three proxy replicas (separate processes, `node dist/main.js`) sharing one Redis, in front of the
 * simulated API. `npm test` builds dist first; run `npm run build` before running this file alone.
 */

const LEASE_MS = 1_500

const stack = useRedisReplicas({
  simLatencyMs: 10,
  prefixName: 'replicas',
  env: { SLUICE_REDIS_LEASE_MS: String(LEASE_MS) },
})

const leftInStack = (): Promise<{ holders: number; queued: number }> => leftInRedis(stack.redis.client(), stack.prefix)

const post = (base: string, path: string, org: string, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  send(base, path, {
    method: 'POST',
    headers: { authorization: basicAuth(org), 'content-type': 'application/json', ...headers },
    body: '{}',
    signal,
  })

describe('three replicas on one Redis', () => {
  it('60 concurrent clients over mixed endpoints and two instances: the API never sees more than a limit, no client sees a 429', async () => {
    stack.sim.reset()
    expect(
      await Promise.all(stack.replicas.map(async (r) => (await adminJson<{ mode: string }>(r, '/status')).mode)),
    ).toEqual(['redis', 'redis', 'redis'])
    const routes = [
      { method: 'POST', path: '/v2/accounts/search' }, // limit 1
      { method: 'POST', path: '/v2/donations/search' }, // limit 1
      { method: 'GET', path: '/v2/donations/42' }, // limit 5
    ]
    const statuses: number[] = []
    await Promise.all(
      Array.from({ length: 60 }, async (_, client) => {
        const replica = stack.replicas[client % 3]!
        const org = client % 2 ? 'org1' : 'org2'
        const route = routes[Math.floor(client / 2) % 3]!
        for (let i = 0; i < 4; i++) {
          // each asks for another page: identical reads would share one call (README "Spending fewer permits")
          const answer = await send(replica.url, `${route.path}?page=${client}-${i}`, {
            method: route.method,
            headers: { authorization: basicAuth(org) },
            body: route.method === 'POST' ? '{}' : undefined,
          })
          statuses.push(answer.status)
        }
      }),
    )
    expect(statuses).toEqual(Array(240).fill(200))
    const keys = Object.values(stack.sim.stats().keys)
    expect(keys).toHaveLength(6)
    for (const k of keys) {
      expect(k.rejected429).toBe(0)
      expect(k.maxInProgress).toBeLessThanOrEqual(k.limit!)
    }
    await until(async () => (await leftInStack()).holders === 0, 'every permit back in Redis')
  })

  it('ten waiting clients per key over three replicas fill each key to its limit, and no further', async () => {
    stack.sim.reset()
    // Held by the API until the test opens the gate: every key stays full for as long as the test
    // looks, so reaching the limit never depends on requests overlapping by chance.
    const routes = [
      { method: 'POST', path: '/v2/accounts/search', endpoint: 'POST /accounts/search', limit: 1 },
      { method: 'GET', path: '/v2/donations/42', endpoint: 'GET /donations/{id}', limit: 5 },
    ]
    const answers = Array.from({ length: 40 }, (_, client) => {
      const org = client % 2 ? 'org3' : 'org4'
      const route = routes[Math.floor(client / 2) % 2]!
      const headers = { authorization: basicAuth(org), 'x-sim-hold': 'full' }
      return send(stack.replicas[client % 3]!.url, `${route.path}?page=${client}`, {
        method: route.method,
        headers,
        body: route.method === 'POST' ? '{}' : undefined,
      })
    })
    const full = (): boolean =>
      ['org3', 'org4'].every((org) => routes.every((r) => keyStats(stack.sim, org, r.endpoint)?.inProgress === r.limit))
    await until(full, 'every key in progress at its limit')
    // the rest wait in sluice's queues, not at the API
    await until(async () => {
      const queued = await Promise.all(
        ['org3', 'org4'].flatMap((org) =>
          routes.map(async (r) => (await statusOf(stack.replicas[0]!, org, r.endpoint))?.queued ?? 0),
        ),
      )
      return queued.reduce((a, b) => a + b, 0) === 40 - 2 * (1 + 5)
    }, 'the others queued')
    stack.sim.open('full')
    expect((await Promise.all(answers)).map((a) => a.status)).toEqual(Array(40).fill(200))
    for (const org of ['org3', 'org4']) {
      for (const r of routes)
        expect(keyStats(stack.sim, org, r.endpoint)).toMatchObject({ maxInProgress: r.limit, rejected429: 0 })
    }
    await until(async () => (await leftInStack()).holders === 0, 'every permit back in Redis')
  })

  it('FIFO holds across replicas', async () => {
    stack.sim.reset()
    // The only permit is held by a limiter in this process (a fourth replica on the same Redis)
    // until every request is queued: no upstream delay has to outlast the queueing.
    const holder = await createRedisLimiter(
      { ...redisSettingsSchema.parse({ url: stack.redis.url, keyPrefix: stack.prefix }), leaseMs: LEASE_MS },
      { log: { info: () => {}, warn: () => {}, error: () => {} } },
    )
    const key = { instance: 'org5', endpoint: 'POST /orders/search' }
    const first = await holder.acquire(key, { limit: 1, maxQueue: 100, deadline: Date.now() + 10_000 })
    const answers: Promise<unknown>[] = []
    for (let i = 0; i < 6; i++) {
      answers.push(post(stack.replicas[i % 3]!.url, '/v2/orders/search', 'org5', { 'x-test-seq': String(i) }))
      await until(
        async () => (await statusOf(stack.replicas[0]!, 'org5', 'POST /orders/search'))?.queued === i + 1,
        `waiter ${i} queued`,
      )
    }
    first.release()
    await Promise.all(answers)
    await holder.close()
    const order = stack.sim
      .stats()
      .arrivals.filter((a) => a.seq !== null)
      .map((a) => a.seq)
    expect(order).toEqual(['0', '1', '2', '3', '4', '5'])
  })

  it('a replica SIGKILLed while holding a permit: the others get it back after the lease', async () => {
    stack.sim.reset()
    const victim = await spawnProxy({
      SLUICE_UPSTREAM: stack.sim.apiUrl,
      SLUICE_REDIS_URL: stack.redis.url,
      SLUICE_REDIS_KEY_PREFIX: stack.prefix,
      SLUICE_REDIS_LEASE_MS: String(LEASE_MS),
      SLUICE_REQUEST_LOG: 'false',
    })
    // never answered by the API: in progress until the victim's connection to it goes away
    void post(victim.url, '/v2/events/search', 'org6', { 'x-sim-hang': '1' }).catch(() => undefined)
    await until(() => keyStats(stack.sim, 'org6', 'POST /events/search')?.inProgress === 1, 'victim holds the permit')
    const waiting = post(stack.replicas[0]!.url, '/v2/events/search', 'org6', { 'x-test-seq': 'survivor' })
    await until(
      async () => (await statusOf(stack.replicas[0]!, 'org6', 'POST /events/search'))?.queued === 1,
      'survivor queued',
    )
    await victim.stop('SIGKILL')
    const answer = await waiting
    expect(answer.status).toBe(200)
    expect(keyStats(stack.sim, 'org6', 'POST /events/search')).toMatchObject({ maxInProgress: 1, rejected429: 0 })
    await until(async () => (await leftInStack()).holders === 0, 'no permit left')
  })

  it('1000 clients hanging up while queued and while upstream leave no holder and no waiter in Redis', async () => {
    stack.sim.reset()
    const requests = Array.from({ length: 1000 }, (_, i) => {
      const controller = new AbortController()
      const replica = stack.replicas[i % 3]!
      const path = i % 2 ? '/v2/accounts/search' : '/v2/donations/7'
      const request = send(replica.url, path, {
        method: i % 2 ? 'POST' : 'GET',
        headers: { authorization: basicAuth(`org${10 + (i % 4)}`), 'x-sim-delay-ms': '30' },
        body: i % 2 ? '{}' : undefined,
        signal: controller.signal,
      }).catch(() => undefined)
      setTimeout(() => controller.abort(), 20 + Math.random() * 400)
      return request
    })
    await Promise.all(requests)
    await until(
      async () => {
        const left = await leftInStack()
        return left.holders === 0 && left.queued === 0
      },
      'Redis to be empty',
      20_000,
    )
    for (const replica of stack.replicas) {
      await until(
        async () => (await adminJson<{ keys: unknown[] }>(replica, '/status')).keys.length === 0,
        'no active key',
      )
    }
    for (const k of Object.values(stack.sim.stats().keys)) expect(k.maxInProgress).toBeLessThanOrEqual(k.limit!)
  })
})
