import { createServer, type Server } from 'node:http'
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { basic, startProxy, type RunningProxy } from '../support/proxy.js'
import { rawExchange } from '../support/raw.js'
import { keyStats, startSim, type Sim } from '../support/sim.js'

const SEARCH = 'POST /accounts/search' // limit 1: a held permit shows as the next request waiting
const CAMPAIGNS = 'GET /campaigns'
const BIG = Buffer.alloc(8 * 1024 * 1024, 'sluice ') // far more than the socket buffers between API, proxy and client hold

// The bound within which the held permit must come back; the second request waits at most this long.
// Without the cut-offs the first client holds the permit for as long as it keeps its socket open.
const BOUND_S = '20'

const logOf = (proxy: RunningProxy, instance: string): Record<string, unknown> | undefined =>
  proxy.logs.find((l) => l.msg === 'request' && l.instance === instance)

describe('no client holds a permit hostage', () => {
  let sim: Sim
  let bigApi: Server
  let proxy: RunningProxy
  let bigProxy: RunningProxy
  beforeAll(async () => {
    sim = await startSim()
    // bodies over 64 KiB stream while the permit is held; the pace window is short so the test is quick
    proxy = await startProxy({
      upstream: sim.apiUrl,
      retry: { maxBufferBytes: 65_536 },
      client: { minBodyBytesPerSecond: 16_384, bodyGraceMs: 500 },
    })
    bigApi = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(BIG.length) })
      res.end(BIG)
    })
    await new Promise<void>((r) => bigApi.listen(0, '127.0.0.1', r))
    const { port } = bigApi.address() as { port: number }
    bigProxy = await startProxy({
      upstream: `http://127.0.0.1:${port}/v2`,
      limits: { overrides: { [CAMPAIGNS]: 1 } },
      client: { answerBufferBytes: 65_536, writeTimeoutMs: 500 },
    })
  })
  afterAll(async () => {
    await proxy.close()
    await bigProxy.close()
    await sim.close()
    await new Promise((r) => bigApi.close(r))
  })

  it('a client that trickles its streamed body is cut off (408) and the permit comes back for the next request', async () => {
    const trickler = rawExchange(
      proxy.url,
      (socket) => {
        socket.write(
          `POST /v2/accounts/search HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('org-trickle')}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n`,
        )
        socket.write(Buffer.alloc(200_000, 'a')) // a fast start, then one byte every 100 ms
        const drip = setInterval(() => (socket.writable ? socket.write('a') : clearInterval(drip)), 100)
        socket.once('close', () => clearInterval(drip))
      },
      60_000,
    )
    await until(
      () => (keyStats(sim, 'org-trickle', SEARCH)?.inProgress ?? 0) === 1,
      'the trickled body to reach the API',
    )
    const next = await send(proxy.url, '/v2/accounts/search', {
      method: 'POST',
      headers: {
        authorization: basic('org-trickle'),
        'content-type': 'application/json',
        'x-sluice-max-wait': BOUND_S,
      },
      body: '{}',
    })
    expect(next.status).toBe(200)
    const cut = await trickler
    expect(cut.status).toBe(408)
    expect(JSON.parse(cut.body)).toEqual([{ code: 'SLUICE_BODY_TOO_SLOW', message: expect.any(String) as string }])
    await until(() => logOf(proxy, 'org-trickle') !== undefined, 'the log line')
    expect(logOf(proxy, 'org-trickle')).toMatchObject({ status: 408, outcome: 'client_timeout' })
    // the trickled request never completed at the API: the API only ever answered the second one
    expect(keyStats(sim, 'org-trickle', SEARCH)).toMatchObject({ inProgress: 0, maxInProgress: 1 })
  })

  it('a client that trickles a small body is cut off before it ever waits for a permit', async () => {
    const cut = await rawExchange(proxy.url, (socket) => {
      socket.write(
        `POST /v2/accounts/search HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('org-small')}\r\nContent-Length: 1000\r\n\r\n`,
      )
      const drip = setInterval(() => (socket.writable ? socket.write('a') : clearInterval(drip)), 100)
      socket.once('close', () => clearInterval(drip))
    })
    expect(cut.status).toBe(408)
    expect(keyStats(sim, 'org-small', SEARCH)).toBeUndefined()
  })

  it('a client that never reads its answer is cut off and the permit comes back for the next request', async () => {
    const url = new URL(bigProxy.url)
    const idle = connect(Number(url.port), url.hostname, () => {
      idle.write(`GET /v2/campaigns HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('org-deaf')}\r\n\r\n`)
      idle.pause() // and never reads
    })
    const closed = new Promise<void>((resolve) => idle.once('close', () => resolve()))
    idle.on('error', () => undefined)
    try {
      const next = await send(bigProxy.url, '/v2/campaigns', {
        headers: { authorization: basic('org-deaf'), 'x-sluice-max-wait': BOUND_S },
      })
      expect(next.status).toBe(200)
      expect(next.text.length).toBe(BIG.length)
      await until(() => logOf(bigProxy, 'org-deaf') !== undefined, 'the log line')
      // the first line is the deaf client's: its answer began (200) and was cut off
      expect(logOf(bigProxy, 'org-deaf')).toMatchObject({ status: 200, outcome: 'client_timeout' })
      // sluice closed the connection: once the client reads what reached it, it sees the end
      idle.resume()
      await closed
    } finally {
      idle.destroy()
    }
  })
})
