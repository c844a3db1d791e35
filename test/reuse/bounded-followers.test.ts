import { describe, expect, it, onTestFinished } from 'vitest'
import { send, until, type Answer } from '../support/http.js'
import { startProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { echoUpstream, sendWhileHeld } from './echo-upstream.js'
import { COUNTRIES, COUNTRIES_ID, reuseStatus } from './support.js'

// Requests following identical calls wait like a queue and are bounded like one: per (instance,
// endpoint) on a replica, at most queue.maxLength follow; the next is refused 503 SLUICE_QUEUE_FULL
// with Retry-After, as a full queue is (README "Spending fewer permits").

const N = 300
const MAX_LENGTH = 5

describe('followers of identical calls are bounded by queue.maxLength', () => {
  it(`${N} identical requests behind a limit-1 key with queue.maxLength ${MAX_LENGTH}: one leads, ${MAX_LENGTH} follow, the rest get 503 at once`, async () => {
    const upstream = await echoUpstream()
    const proxy = await startProxy({
      upstream: upstream.apiUrl,
      requestLog: true,
      limits: { overrides: { [COUNTRIES_ID]: 1 } },
      queue: { maxLength: MAX_LENGTH },
    })
    onTestFinished(() => proxy.close())

    // another API key's request takes the key's only permit and is held by the upstream
    upstream.hold()
    const blocker = send(proxy.url, COUNTRIES, { headers: { authorization: basicAuth('org1', 'blocker-key') } })
    await until(() => upstream.held === 1, 'the blocker reaches the upstream')

    let answered = 0
    const auth = basicAuth('org1', 'app-key')
    const answers: Promise<Answer>[] = Array.from({ length: N }, () =>
      send(proxy.url, COUNTRIES, { headers: { authorization: auth } }).then((a) => {
        answered++
        return a
      }),
    )
    // every request is answered at once or follows the leader, which waits in the queue
    await until(
      async () => answered + (await reuseStatus(proxy)).coalescing.followers === N - 1,
      'all but the leader answered or following',
    )
    expect((await reuseStatus(proxy)).coalescing.followers).toBe(MAX_LENGTH)
    expect(answered).toBe(N - 1 - MAX_LENGTH)

    upstream.release()
    expect((await blocker).status).toBe(200)
    const got = await Promise.all(answers)
    const served = got.filter((a) => a.status === 200)
    const refused = got.filter((a) => a.status !== 200)
    expect(served).toHaveLength(1 + MAX_LENGTH)
    expect(new Set(served.map((a) => a.text)).size).toBe(1)
    expect(refused).toHaveLength(N - 1 - MAX_LENGTH)
    for (const a of refused) {
      expect(a.status).toBe(503)
      expect(Number(a.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect(a.json()).toEqual([
        {
          code: 'SLUICE_QUEUE_FULL',
          message: `${MAX_LENGTH} requests already wait for identical calls to ${COUNTRIES_ID} (instance org1); try again later`,
        },
      ])
    }
    expect(upstream.seen).toHaveLength(2) // the blocker and the one shared call
    expect((await reuseStatus(proxy)).coalescing.followers).toBe(0)
    const outcomes = proxy.logs.filter((l) => l.msg === 'request' && l.status === 503).map((l) => l.outcome)
    expect(outcomes).toEqual(Array(N - 1 - MAX_LENGTH).fill('queue_full'))
  })

  it('with queue.maxLength 0 (never wait) no request follows: identical requests each make their own call while permits are free', async () => {
    const upstream = await echoUpstream()
    const proxy = await startProxy({ upstream: upstream.apiUrl, queue: { maxLength: 0 } })
    onTestFinished(() => proxy.close())
    const auth = basicAuth('org1', 'app-key')
    const got = await sendWhileHeld(
      proxy,
      upstream,
      { path: COUNTRIES, options: { headers: { authorization: auth } } },
      { path: COUNTRIES, options: { headers: { authorization: auth } } },
    )
    expect(got.map((a) => a.status)).toEqual([200, 200])
    expect(upstream.seen).toHaveLength(2)
  })
})
