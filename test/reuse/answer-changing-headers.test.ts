import { describe, expect, it, onTestFinished } from 'vitest'
import type { Answer } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { echoUpstream, sendWhileHeld, type Echo, type EchoUpstream } from './echo-upstream.js'
import { COUNTRIES } from './support.js'

// A request that differs from another in a header that changes the answer (a conditional, a Range,
// a Cookie…) never shares that other's call: each gets the answer the API gives it (docs/reuse.md).

const AUTH = basicAuth('org1', 'app-key')

async function stack(): Promise<{ upstream: EchoUpstream; proxy: RunningProxy }> {
  const upstream = await echoUpstream()
  const proxy = await startProxy({ upstream: upstream.apiUrl })
  onTestFinished(() => proxy.close())
  return { upstream, proxy }
}

const echoOf = (a: Answer): Echo => a.json<Echo>()

describe('a header that changes the answer keeps requests apart', () => {
  it('If-None-Match leader, plain follower: the leader gets its 304, the follower its own 200 with the body', async () => {
    const { upstream, proxy } = await stack()
    const [conditional, plain] = await sendWhileHeld(
      proxy,
      upstream,
      { path: COUNTRIES, options: { headers: { authorization: AUTH, 'if-none-match': '"v1"' } } },
      { path: COUNTRIES, options: { headers: { authorization: AUTH } } },
    )
    expect(conditional!.status).toBe(304)
    expect(conditional!.text).toBe('')
    expect(plain!.status).toBe(200)
    expect(echoOf(plain!).headers['if-none-match']).toBeUndefined()
    expect(upstream.seen).toHaveLength(2)
  })

  it('Range leader, plain follower: the leader gets its 206 fragment, the follower the whole answer', async () => {
    const { upstream, proxy } = await stack()
    const [ranged, plain] = await sendWhileHeld(
      proxy,
      upstream,
      { path: COUNTRIES, options: { headers: { authorization: AUTH, range: 'bytes=0-9' } } },
      { path: COUNTRIES, options: { headers: { authorization: AUTH } } },
    )
    expect(ranged!.status).toBe(206)
    expect(ranged!.text).toHaveLength(10)
    expect(plain!.status).toBe(200)
    expect(echoOf(plain!).headers.range).toBeUndefined()
    expect(upstream.seen).toHaveLength(2)
  })

  it("Cookie leader, follower without one or with another: each answer is shaped by its own request's cookie", async () => {
    const { upstream, proxy } = await stack()
    const [a, none, b] = await sendWhileHeld(
      proxy,
      upstream,
      { path: COUNTRIES, options: { headers: { authorization: AUTH, cookie: 'session=a' } } },
      { path: COUNTRIES, options: { headers: { authorization: AUTH } } },
      { path: COUNTRIES, options: { headers: { authorization: AUTH, cookie: 'session=b' } } },
    )
    expect([a, none, b].map((x) => x!.status)).toEqual([200, 200, 200])
    expect([a, none, b].map((x) => echoOf(x!).headers.cookie)).toEqual(['session=a', undefined, 'session=b'])
    expect(upstream.seen).toHaveLength(3)
  })

  it('the same answer-changing headers, sent in another order and with other user-agents and trace ids, still share one call', async () => {
    const { upstream, proxy } = await stack()
    const answers = await sendWhileHeld(
      proxy,
      upstream,
      {
        path: COUNTRIES,
        options: {
          headers: {
            authorization: AUTH,
            'if-none-match': '"v0"',
            cookie: 'session=a',
            'user-agent': 'one',
            traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
          },
        },
      },
      {
        path: COUNTRIES,
        options: {
          headers: {
            cookie: 'session=a',
            'if-none-match': '"v0"',
            authorization: AUTH,
            'user-agent': 'two',
            traceparent: '00-1af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01',
          },
        },
      },
    )
    expect(answers.map((x) => x.status)).toEqual([200, 200])
    expect(upstream.seen).toHaveLength(1)
    // and a plain request with another If-None-Match in between would not have: the key holds it
    const [again, other] = await sendWhileHeld(
      proxy,
      upstream,
      { path: COUNTRIES, options: { headers: { authorization: AUTH, 'if-none-match': '"v0"' } } },
      { path: COUNTRIES, options: { headers: { authorization: AUTH, 'if-none-match': '"v1"' } } },
    )
    expect([again!.status, other!.status]).toEqual([200, 304])
    expect(upstream.seen).toHaveLength(3)
  })
})
