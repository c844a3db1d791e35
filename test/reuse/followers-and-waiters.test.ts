import { describe, expect, it, onTestFinished } from 'vitest'
import { tokenHash } from '../support/apps.js'
import { send, until, type Answer } from '../support/http.js'
import { startProxy, statusOf, type RunningProxy } from '../support/proxy.js'
import { uniquePrefix } from '../support/redis.js'
import { basicAuth } from '../support/sim.js'
import { useRedis } from '../support/use-redis.js'
import { echoUpstream } from './echo-upstream.js'
import { COUNTRIES, COUNTRIES_ID, reuseStatus } from './support.js'

/*
 * An app's followers and its requests waiting for a permit on a key count together against its
 * `maxQueued` (docs/reuse.md, "How many may follow"), in either order: followers first, then a waiter
 * (the limiter counts the followers), or a waiter first, then followers (the follower bound counts
 * the waiter). And with app identity on, an app's followers stay within its share of the follower
 * bound (`queue.maxShare`), so another app's follower is served. The attacker and a victim side by side.
 */

const redis = useRedis()
const BACKENDS = [
  { name: 'in process', settings: (): Record<string, unknown> => ({}) },
  {
    name: 'Redis',
    settings: (): Record<string, unknown> => ({ redis: { url: redis.url, keyPrefix: uniquePrefix('fw') } }),
  },
]

/** A read that may be watched: settled once answered. */
interface Read {
  readonly answer: Promise<Answer>
  settled(): boolean
}

function reader(proxy: RunningProxy, headersOf: (app: string) => Record<string, string>) {
  const read = (app: string, query = ''): Read => {
    let done = false
    const answer = send(proxy.url, COUNTRIES + query, { headers: headersOf(app) }).finally(() => (done = true))
    return { answer, settled: () => done }
  }
  /** one more identical read, once it follows a call or is answered */
  const follow = async (app: string, query = ''): Promise<Read> => {
    const before = (await reuseStatus(proxy)).coalescing.followers
    const r = read(app, query)
    await until(async () => r.settled() || (await reuseStatus(proxy)).coalescing.followers > before, 'it follows')
    return r
  }
  /** one more read of its own, once it waits for the key's permit or is answered */
  const wait = async (app: string, query: string): Promise<Read> => {
    const before = (await statusOf(proxy, 'org1', COUNTRIES_ID))?.queued ?? 0
    const r = read(app, query)
    await until(
      async () => r.settled() || ((await statusOf(proxy, 'org1', COUNTRIES_ID))?.queued ?? 0) > before,
      'it waits',
    )
    return r
  }
  return { read, follow, wait }
}

const fullFor = (message: string) => [{ code: 'SLUICE_QUEUE_FULL', message }]

describe.each(BACKENDS)('followers and waiters of one app count together ($name limiter)', ({ settings }) => {
  async function setUp() {
    const upstream = await echoUpstream()
    const proxy = await startProxy({
      upstream: upstream.apiUrl,
      limits: { overrides: { [COUNTRIES_ID]: 1 } },
      queue: { maxLength: 5 },
      fairness: { apps: { batch: { class: 'batch', maxQueued: 1 } } },
      ...settings(),
    })
    onTestFinished(() => proxy.close())
    const headersOf = (app: string) => ({ authorization: basicAuth('org1', 'app-key'), 'x-sluice-app': app })
    return { upstream, proxy, ...reader(proxy, headersOf) }
  }

  it('followers first: a batch request that would wait is refused for its follower; the web app is served', async () => {
    const { upstream, read, follow, wait } = await setUp()
    upstream.hold()
    const leader = read('batch')
    await until(() => upstream.held === 1, "the batch app's call holds the key's one permit")
    const follower = await follow('batch')
    const waiter = await wait('batch', '?page=2')
    const web = await wait('web', '?page=3')
    upstream.release()
    expect((await waiter.answer).json()).toEqual(
      fullFor(
        'The queue for GET /properties/countries (instance org1) for app batch is full (1 waiting); try again later',
      ),
    )
    expect([await leader.answer, await follower.answer, await web.answer].map((a) => a.status)).toEqual([200, 200, 200])
  })

  it('waiters first: a batch follower is refused for its waiting request; the web app is served', async () => {
    const { upstream, read, follow, wait } = await setUp()
    upstream.hold()
    const leader = read('web')
    await until(() => upstream.held === 1, "the web app's call holds the key's one permit")
    const waiter = await wait('batch', '?page=2')
    const follower = await follow('batch')
    const web = await follow('web')
    upstream.release()
    expect((await follower.answer).json()).toEqual(
      fullFor(
        '1 requests of app batch already wait on GET /properties/countries (instance org1) (its maxQueued); try again later',
      ),
    )
    expect([await leader.answer, await waiter.answer, await web.answer].map((a) => a.status)).toEqual([200, 200, 200])
  })
})

describe('followers within their share of the follower bound (app identity on)', () => {
  it("a batch app's followers stop at its share (2 of 4); the web app's follower is served", async () => {
    const upstream = await echoUpstream()
    const BATCH = 'app-token-batch-follow-attack-1'
    const WEB = 'app-token-web-follow-victim-02'
    const proxy = await startProxy({
      upstream: upstream.apiUrl,
      queue: { maxLength: 4 }, // queue.maxShare 0.5, the default: 2 per app
      apps: {
        enabled: true,
        list: {
          batch: { tokens: [tokenHash(BATCH)], orgs: ['org1'] },
          web: { tokens: [tokenHash(WEB)], orgs: ['org1'] },
        },
      },
    })
    onTestFinished(() => proxy.close())
    const tokens: Record<string, string> = { batch: BATCH, web: WEB }
    const { read, follow } = reader(proxy, (app) => ({
      authorization: basicAuth('org1', 'app-key'),
      'x-sluice-app-token': tokens[app]!,
    }))
    upstream.hold()
    const leader = read('batch')
    await until(() => upstream.held === 1, "the batch app's call reaches the upstream")
    const batch: Read[] = []
    for (let i = 0; i < 4; i++) batch.push(await follow('batch'))
    // apps never share a call with identity on: the web app's read leads its own, and one more follows it
    const webLeader = read('web')
    await until(() => upstream.held === 2, "the web app's call reaches the upstream")
    const webFollower = await follow('web')
    upstream.release()
    expect([await leader.answer, await webLeader.answer, await webFollower.answer].map((a) => a.status)).toEqual([
      200, 200, 200,
    ])
    const got = await Promise.all(batch.map((r) => r.answer))
    expect(got.map((a) => a.status)).toEqual([200, 200, 503, 503])
    expect(got[2]!.json()).toEqual(
      fullFor(
        '2 requests of app batch already wait on GET /properties/countries (instance org1) (its share, queue.maxShare); try again later',
      ),
    )
  })
})
