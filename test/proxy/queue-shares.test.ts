import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Permit } from '../../src/limiter/types.js'
import { tokenHash } from '../support/apps.js'
import { send, until, type Answer } from '../support/http.js'
import { adminJson, startProxy, statusOf, type RunningProxy } from '../support/proxy.js'
import { uniquePrefix } from '../support/redis.js'
import { basicAuth, startSim, type Sim } from '../support/sim.js'
import { useRedis } from '../support/use-redis.js'

/*
 * Queue slots have shares (docs/configuration.md, `queue.maxShare`): with app identity on, an app
 * with no `maxQueued` of its own queues at most `queue.maxShare` (0.5) of `queue.maxLength` on a key,
 * so an attacker's burst leaves the rest of the queue to the other apps; with app identity off the
 * key's queue is its organisation's alone. The key's one permit is held by the test through the
 * proxy's own limiter, so every request can only queue or be refused, whatever the timing.
 */

const SEARCH = 'POST /accounts/search'
const BATCH = 'app-token-batch-queue-attack-01'
const WEB = 'app-token-web-queue-victim-02'
const redis = useRedis()

const BACKENDS = [
  { name: 'in process', settings: (): Record<string, unknown> => ({}) },
  {
    name: 'Redis',
    settings: (): Record<string, unknown> => ({ redis: { url: redis.url, keyPrefix: uniquePrefix('qshare') } }),
  },
]

const wholeError = (a: Answer) => ({ status: a.status, body: a.json() })

describe.each(BACKENDS)('shares of the queue through the proxy ($name limiter)', ({ settings }) => {
  let sim: Sim
  let apps: RunningProxy
  let orgs: RunningProxy
  beforeAll(async () => {
    sim = await startSim({ latencyMs: 0 })
    // app identity on: both apps of organisation 1001 keep their own API key, the token in x-sluice-app-token
    apps = await startProxy({
      upstream: sim.apiUrl,
      queue: { maxLength: 4 }, // queue.maxShare 0.5, the default: 2 per app
      apps: {
        enabled: true,
        list: {
          batch: { tokens: [tokenHash(BATCH)], orgs: ['1001'] },
          web: { tokens: [tokenHash(WEB)], orgs: ['1001'] },
        },
      },
      ...settings(),
    })
    orgs = await startProxy({ upstream: sim.apiUrl, queue: { maxLength: 4 }, ...settings() })
  })
  afterAll(async () => {
    await apps?.close()
    await orgs?.close()
    await sim?.close()
  })

  /** The key's only permit, taken through the proxy's limiter: the requests can only wait or be refused. */
  const hold = (proxy: RunningProxy, org: string): Promise<Permit> =>
    proxy.app.limiter.acquire(
      { instance: org, endpoint: SEARCH },
      { limit: 1, maxQueue: 1000, deadline: Date.now() + 60_000 },
    )

  /** `n` searches at once; resolves once each of them is answered or queued (`queuedBefore` already were). */
  async function burst(proxy: RunningProxy, org: string, n: number, headers: Record<string, string>, queuedBefore = 0) {
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
      async () => answers.length + ((await statusOf(proxy, org, SEARCH))?.queued ?? 0) - queuedBefore >= n,
      'every request answered or queued',
    )
    return { answers, all }
  }

  it('app identity on: six of one app at once, two queue (its share), four get 503 naming it; the other app is served', async () => {
    const held = await hold(apps, '1001')
    const attack = await burst(apps, '1001', 6, { 'x-sluice-app-token': BATCH })
    const full = {
      status: 503,
      body: [
        {
          code: 'SLUICE_QUEUE_FULL',
          message:
            'The queue for POST /accounts/search (instance 1001) for app batch (its share, queue.maxShare) is full (2 waiting); try again later',
        },
      ],
    }
    expect(attack.answers.map(wholeError)).toEqual(Array.from({ length: 4 }, () => full))
    const victim = await burst(apps, '1001', 1, { 'x-sluice-app-token': WEB }, 2)
    expect(victim.answers).toEqual([])
    // /status: each app's use of the key's queue
    const status = await adminJson<{ keys: { instance: string; apps: { app: string; queued: number }[] }[] }>(
      apps,
      '/status',
    )
    const key = status.keys.find((k) => k.instance === '1001')
    // (the test's own permit is the `default` app's, with nothing queued)
    const queuedBy = key?.apps.filter((a) => a.queued > 0).map(({ app, queued }) => ({ app, queued }))
    expect(queuedBy?.sort((a, b) => (a.app < b.app ? -1 : 1))).toEqual([
      { app: 'batch', queued: 2 },
      { app: 'web', queued: 1 },
    ])
    held.release()
    expect((await Promise.all(victim.all)).map((a) => a.status)).toEqual([200])
    expect((await Promise.all(attack.all)).filter((a) => a.status === 200)).toHaveLength(2)
  })

  it("app identity off: the key's queue is its organisation's alone, and another organisation's key keeps its own", async () => {
    const held = await hold(orgs, 'a1')
    const attack = await burst(orgs, 'a1', 6, {})
    // the whole queue.maxLength for the one organisation, whatever app name its requests carry
    expect(attack.answers.map((a) => a.status)).toEqual([503, 503])
    expect((await statusOf(orgs, 'a1', SEARCH))?.queued).toBe(4)
    const victim = await send(orgs.url, '/v2/accounts/search', {
      method: 'POST',
      headers: { authorization: basicAuth('v1'), 'content-type': 'application/json' },
      body: '{}',
    })
    expect(victim.status).toBe(200)
    held.release()
    expect((await Promise.all(attack.all)).filter((a) => a.status === 200)).toHaveLength(4)
  })
})
