import { describe, expect, it, onTestFinished } from 'vitest'
import { send } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { echoUpstream, sendWhileHeld, type Echo, type EchoUpstream } from './echo-upstream.js'
import { COUNTRIES, COUNTRIES_ID } from './support.js'

// Requests that share an answer may differ only in headers that do not change it (user-agent, trace
// ids…, docs/reuse.md). An answer whose Vary is `*` or names one of those, or that sets a cookie,
// is one request's: it is neither given to the requests that followed its call nor cached.

const AUTH = basicAuth('org1', 'app-key')

async function stack(): Promise<{ upstream: EchoUpstream; proxy: RunningProxy }> {
  const upstream = await echoUpstream()
  const proxy = await startProxy({ upstream: upstream.apiUrl, cache: { endpoints: [COUNTRIES_ID] } })
  onTestFinished(() => proxy.close())
  return { upstream, proxy }
}

const get = (proxy: RunningProxy, path: string, headers: Record<string, string> = {}) =>
  send(proxy.url, path, { headers: { authorization: AUTH, ...headers } })

describe("answers that are one request's", () => {
  it('Vary: User-Agent: a follower with another user-agent gets its own call; the answer is not cached', async () => {
    const { upstream, proxy } = await stack()
    const path = COUNTRIES + '?vary=User-Agent'
    const [a, b] = await sendWhileHeld(
      proxy,
      upstream,
      { path, options: { headers: { authorization: AUTH, 'user-agent': 'app-a' } } },
      { path, options: { headers: { authorization: AUTH, 'user-agent': 'app-b' } } },
    )
    expect([a!.status, b!.status]).toEqual([200, 200])
    expect([a, b].map((x) => x!.json<Echo>().headers['user-agent'])).toEqual(['app-a', 'app-b'])
    expect(upstream.seen).toHaveLength(2)

    const later = await get(proxy, path, { 'user-agent': 'app-c' })
    expect(later.headers['x-sluice-cache']).toBe('miss')
    expect(later.json<Echo>().headers['user-agent']).toBe('app-c')
    expect(upstream.seen).toHaveLength(3)
  })

  it('Vary: * is never cached; Vary naming a header of the key (Accept) is, per value', async () => {
    const { upstream, proxy } = await stack()
    const star = COUNTRIES + '?vary=*'
    expect((await get(proxy, star)).headers['x-sluice-cache']).toBe('miss')
    const again = await get(proxy, star)
    expect(again.headers['x-sluice-cache']).toBe('miss')
    expect(again.json<Echo>().call).toBe(2)

    const byAccept = COUNTRIES + '?vary=Accept'
    const json = await get(proxy, byAccept, { accept: 'application/json' })
    expect((await get(proxy, byAccept, { accept: 'application/json' })).headers['x-sluice-cache']).toBe('hit')
    const xml = await get(proxy, byAccept, { accept: 'application/xml' })
    expect(xml.headers['x-sluice-cache']).toBe('miss')
    expect(xml.json<Echo>().headers.accept).toBe('application/xml')
    expect(json.json<Echo>().headers.accept).toBe('application/json')
    expect(upstream.seen).toHaveLength(4)
  })

  it('an answer that sets a cookie goes to its own client only: the follower gets its own session', async () => {
    const { upstream, proxy } = await stack()
    const path = COUNTRIES + '?cookie=1'
    const [a, b] = await sendWhileHeld(
      proxy,
      upstream,
      { path, options: { headers: { authorization: AUTH } } },
      { path, options: { headers: { authorization: AUTH } } },
    )
    expect([a!.headers['set-cookie'], b!.headers['set-cookie']]).toEqual([['session=1; Path=/'], ['session=2; Path=/']])
    expect(upstream.seen).toHaveLength(2)
  })
})
