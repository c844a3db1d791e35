import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { COUNTRIES, followersWaiting } from './support.js'

/**
 * An upstream whose answers the test releases: each request gets its head at once and its body only
 * when the test calls `finish()`, so "the answer has started" is a state the test holds, not a race.
 */
class GatedUpstream {
  private constructor(
    private readonly server: Server,
    readonly url: string,
    readonly calls: ServerResponse[],
  ) {}

  static async start(): Promise<GatedUpstream> {
    const calls: ServerResponse[] = []
    const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('[{"code":"US","name":"United')
      calls.push(res)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return new GatedUpstream(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/v2`, calls)
  }

  /** Ends the answer of call `i`. */
  finish(i: number): void {
    this.calls[i]!.end(` States ${i}"}]`)
  }

  close(): Promise<void> {
    this.server.closeAllConnections()
    return new Promise((resolve) => this.server.close(() => resolve()))
  }
}

describe('once a shared call has started its answer', () => {
  let upstream: GatedUpstream
  let proxy: RunningProxy
  beforeAll(async () => {
    upstream = await GatedUpstream.start()
    proxy = await startProxy({ upstream: upstream.url })
  })
  afterAll(async () => {
    await proxy?.close()
    await upstream?.close()
  })

  it('an identical request arriving then makes its own call and waits for none of the first', async () => {
    const auth = basicAuth('org1', 'app-key')
    const first = send(proxy.url, COUNTRIES, { headers: { authorization: auth } })
    await until(() => upstream.calls.length === 1, 'the first call reaches the upstream')
    const second = send(proxy.url, COUNTRIES, { headers: { authorization: auth } })
    // the second reaches the upstream while the first's body is still held back
    await until(() => upstream.calls.length === 2, 'the second makes its own call')
    upstream.finish(1)
    expect((await second).text).toBe('[{"code":"US","name":"United States 1"}]')
    upstream.finish(0)
    expect((await first).text).toBe('[{"code":"US","name":"United States 0"}]')
  })
})

describe('followers of a call whose leading client leaves mid-answer', () => {
  let upstream: GatedUpstream
  let proxy: RunningProxy
  beforeAll(async () => {
    upstream = await GatedUpstream.start()
    // limit 1 and a held permit, so the leader and its followers queue together before any answer starts
    proxy = await startProxy({ upstream: upstream.url, limits: { overrides: { 'GET /properties/countries': 1 } } })
  })
  afterAll(async () => {
    await proxy?.close()
    await upstream?.close()
  })

  it('get the whole answer, from one call', async () => {
    const blocker = send(proxy.url, COUNTRIES, { headers: { authorization: basicAuth('org1', 'blocker-key') } })
    await until(() => upstream.calls.length === 1, 'the blocker holds the permit')
    const auth = basicAuth('org1', 'app-key')
    let leaderGone!: () => void
    const gone = new Promise<void>((resolve) => (leaderGone = resolve))
    const req = httpRequest(`${proxy.url}${COUNTRIES}`, { headers: { authorization: auth }, agent: false }, (res) => {
      res.once('data', () => {
        req.destroy()
        leaderGone()
      })
    })
    req.on('error', () => undefined)
    req.end()
    await until(
      async () =>
        ((await (await fetch(proxy.adminUrl + '/status')).json()) as { reuse: { coalescing: { calls: number } } }).reuse
          .coalescing.calls === 1,
      'the leader queues',
    )
    const followers = Array.from({ length: 3 }, () => send(proxy.url, COUNTRIES, { headers: { authorization: auth } }))
    await followersWaiting(proxy, 3)
    upstream.finish(0) // the blocker's answer: the leader gets the permit
    await until(() => upstream.calls.length === 2, 'the shared call reaches the upstream')
    await gone // the leading client read the first chunk and hung up
    upstream.finish(1)
    const got = await Promise.all(followers)
    expect(got.map((a) => a.text)).toEqual(Array(3).fill('[{"code":"US","name":"United States 1"}]'))
    expect(upstream.calls).toHaveLength(2)
    await blocker
  })
})
