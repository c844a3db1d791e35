import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Permit } from '../../src/limiter/types.js'
import { send, until, type Answer } from '../support/http.js'
import { startProxy, statusOf, type RunningProxy } from '../support/proxy.js'
import { uniquePrefix } from '../support/redis.js'
import { basicAuth, startSim, type Sim } from '../support/sim.js'
import { useRedis } from '../support/use-redis.js'

// `queue.maxLength` and an app's `maxQueued` hold for a burst of requests, whichever limiter decides
// (README "Settings"; docs/redis-limiter.md, maxQueued): with Redis, the requests that arrive within
// one round trip used to all queue (each counted only the waiters whose acquire reply was back).
// The key's one permit is held by the test through the proxy's own limiter, so every request of the
// burst can only queue or be refused, whatever the timing: exactly the bound queue, the rest get 503.

const SEARCH = 'POST /accounts/search'
const redis = useRedis()

const BACKENDS = [
  { name: 'in process', settings: (): Record<string, unknown> => ({}) },
  {
    name: 'Redis',
    settings: (): Record<string, unknown> => ({ redis: { url: redis.url, keyPrefix: uniquePrefix('burst') } }),
  },
]

describe.each(BACKENDS)('queue bounds under a burst through the proxy ($name limiter)', ({ settings }) => {
  let sim: Sim
  let proxy: RunningProxy
  beforeAll(async () => {
    sim = await startSim({ latencyMs: 0 })
    proxy = await startProxy({
      upstream: sim.apiUrl,
      queue: { maxLength: 2 },
      fairness: { apps: { batch: { maxQueued: 1 } } },
      ...settings(),
    })
  })
  afterAll(async () => {
    await proxy?.close()
    await sim?.close()
  })

  /** The key's only permit, taken through the proxy's limiter: the burst can only wait or be refused. */
  const hold = (org: string): Promise<Permit> =>
    proxy.app.limiter.acquire(
      { instance: org, endpoint: SEARCH },
      { limit: 1, maxQueue: 1000, deadline: Date.now() + 60_000 },
    )

  /** `n` searches at once; resolves with the answers once each of them is answered or queued. */
  async function burst(org: string, n: number, headers: Record<string, string> = {}) {
    const answers: Answer[] = []
    const all = Array.from({ length: n }, () =>
      send(proxy.url, '/v2/accounts/search', {
        method: 'POST',
        headers: { authorization: basicAuth(org), 'content-type': 'application/json', ...headers },
        body: '{}',
      }).then((a) => {
        answers.push(a)
        return a
      }),
    )
    await until(
      async () => answers.length + ((await statusOf(proxy, org, SEARCH))?.queued ?? 0) >= n,
      'every request answered or queued',
    )
    return { answers, all }
  }

  const wholeError = (a: Answer) => ({ status: a.status, retryAfter: a.headers['retry-after'], body: a.json() })

  it('limit 1, queue.maxLength 2, ten at once: two wait, eight get 503 SLUICE_QUEUE_FULL', async () => {
    const held = await hold('org1')
    const { answers, all } = await burst('org1', 10)
    const full = {
      status: 503,
      retryAfter: '1',
      body: [
        {
          code: 'SLUICE_QUEUE_FULL',
          message: 'The queue for POST /accounts/search (instance org1) is full (2 waiting); try again later',
        },
      ],
    }
    expect(answers.map(wholeError)).toEqual(Array.from({ length: 8 }, () => full))
    expect((await statusOf(proxy, 'org1', SEARCH))?.queued).toBe(2)
    held.release()
    const statuses = (await Promise.all(all)).map((a) => a.status).sort()
    expect(statuses).toEqual([200, 200, 503, 503, 503, 503, 503, 503, 503, 503])
  })

  it("an app's maxQueued 1, five at once: one waits, four get 503 naming the app", async () => {
    const held = await hold('org2')
    const { answers, all } = await burst('org2', 5, { 'x-sluice-app': 'batch' })
    const full = {
      status: 503,
      retryAfter: '1',
      body: [
        {
          code: 'SLUICE_QUEUE_FULL',
          message:
            'The queue for POST /accounts/search (instance org2) for app batch is full (1 waiting); try again later',
        },
      ],
    }
    expect(answers.map(wholeError)).toEqual(Array.from({ length: 4 }, () => full))
    expect((await statusOf(proxy, 'org2', SEARCH))?.queued).toBe(1)
    held.release()
    expect((await Promise.all(all)).filter((a) => a.status === 200)).toHaveLength(1)
  })
})
