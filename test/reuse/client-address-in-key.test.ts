import { describe, expect, it, onTestFinished } from 'vitest'
import { send, until, type Answer } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { echoUpstream, type Echo, type EchoUpstream } from './echo-upstream.js'
import { COUNTRIES, reuseStatus } from './support.js'

// An API may answer by the client's address sluice sends it (X-Forwarded-For): client B, whom such an
// API refuses, must never get client A's answer by asking the same while A's call is in flight
// (docs/reuse.md, "The key"). With `forwardClientAddress: false` the API gets no address, and the two
// share again. A and B are two addresses of this machine's loopback.

const AUTH = basicAuth('org1', 'app-key')
const A = '127.0.0.1'
const B = '127.0.0.2'

async function stack(settings: Record<string, unknown> = {}): Promise<{ upstream: EchoUpstream; proxy: RunningProxy }> {
  const upstream = await echoUpstream()
  const proxy = await startProxy({ upstream: upstream.apiUrl, ...settings })
  onTestFinished(() => proxy.close())
  return { upstream, proxy }
}

/** A's request held at the upstream; then B's, until it follows A's call or reaches the upstream itself. */
async function aThenB(proxy: RunningProxy, upstream: EchoUpstream): Promise<[Answer, Answer]> {
  upstream.hold()
  const a = send(proxy.url, COUNTRIES, { headers: { authorization: AUTH }, localAddress: A })
  await until(() => upstream.held === 1, "A's request reaches the upstream")
  const b = send(proxy.url, COUNTRIES, { headers: { authorization: AUTH }, localAddress: B })
  await until(
    async () => upstream.held + (await reuseStatus(proxy)).coalescing.followers === 2,
    "B's request follows A's call or reaches the upstream",
  )
  upstream.release()
  return [await a, await b]
}

describe("the client's address sent upstream is part of the reuse key", () => {
  it("B never gets A's answer: each call carries its own client's address", async () => {
    const { upstream, proxy } = await stack()
    const [a, b] = await aThenB(proxy, upstream)
    expect(upstream.seen).toHaveLength(2)
    expect(a.json<Echo>().headers['x-forwarded-for']).toBe(A)
    expect(b.json<Echo>().headers['x-forwarded-for']).toBe(B)
  })

  it('a client-sent X-Forwarded-For is part of it too', async () => {
    const { upstream, proxy } = await stack()
    upstream.hold()
    const first = send(proxy.url, COUNTRIES, { headers: { authorization: AUTH, 'x-forwarded-for': '10.0.0.1' } })
    await until(() => upstream.held === 1, 'the first request reaches the upstream')
    const second = send(proxy.url, COUNTRIES, { headers: { authorization: AUTH, 'x-forwarded-for': '10.0.0.2' } })
    await until(() => upstream.held === 2, 'the second makes its own call')
    upstream.release()
    expect((await second).json<Echo>().headers['x-forwarded-for']).toBe(`10.0.0.2, ${A}`)
    expect((await first).status).toBe(200)
  })

  it('with forwardClientAddress: false the API gets no address, and A and B share one call', async () => {
    const { upstream, proxy } = await stack({ forwardClientAddress: false, trustProxy: true })
    const [a, b] = await aThenB(proxy, upstream)
    expect(upstream.seen).toHaveLength(1)
    expect(b.text).toBe(a.text)
    const seen = upstream.seen[0]!.headers
    expect(seen['x-forwarded-for']).toBeUndefined()
    // nor what a trusted proxy in front wrote
    const claims = await send(proxy.url, '/v2/accounts/1', {
      headers: {
        authorization: AUTH,
        'x-forwarded-for': '10.1.1.1',
        forwarded: 'for=10.1.1.1',
        'x-real-ip': '10.1.1.1',
      },
    })
    const echoed = claims.json<Echo>().headers
    expect([echoed['x-forwarded-for'], echoed.forwarded, echoed['x-real-ip']]).toEqual([
      undefined,
      undefined,
      undefined,
    ])
  })
})
