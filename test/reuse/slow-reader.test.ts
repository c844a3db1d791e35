import { createServer, type Server } from 'node:http'
import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { basic, startProxy, type RunningProxy } from '../support/proxy.js'
import { COUNTRIES, reuseStatus } from './support.js'

// Far more than the socket buffers between API, proxy and client hold, and than client.answerBufferBytes.
const BIG = Buffer.alloc(8 * 1024 * 1024, 'sluice ')

/** An API that answers every request with BIG, but only once `open()` is called (so followers can join first). */
function gatedApi(): { server: Server; calls: () => number; open: () => void; shut: () => void } {
  let calls = 0
  let opened = false
  const waiting: (() => void)[] = []
  const server = createServer((_req, res) => {
    calls++
    const answer = (): void => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(BIG.length) })
      res.end(BIG)
    }
    if (opened) answer()
    else waiting.push(answer)
  })
  return {
    server,
    calls: () => calls,
    open: () => {
      opened = true
      for (const answer of waiting.splice(0)) answer()
    },
    shut: () => {
      opened = false
    },
  }
}

/** A client that sends a GET and never reads its answer. */
function deafClient(proxy: RunningProxy, auth: string): { socket: Socket; closed: Promise<void> } {
  const url = new URL(proxy.url)
  const socket = connect(Number(url.port), url.hostname, () => {
    socket.write(`GET ${COUNTRIES} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\n\r\n`)
    socket.pause()
  })
  socket.on('error', () => undefined)
  return { socket, closed: new Promise<void>((resolve) => socket.once('close', () => resolve())) }
}

const logsOf = (proxy: RunningProxy): Record<string, unknown>[] => proxy.logs.filter((l) => l.msg === 'request')

describe('a slow reader among requests that share one call', () => {
  let api: ReturnType<typeof gatedApi>
  let apiUrl: string
  beforeAll(async () => {
    api = gatedApi()
    await new Promise<void>((r) => api.server.listen(0, '127.0.0.1', r))
    apiUrl = `http://127.0.0.1:${(api.server.address() as { port: number }).port}/v2`
  })
  afterAll(async () => {
    api.server.closeAllConnections()
    await new Promise((r) => api.server.close(r))
  })

  it('a leading client that never reads does not hold up the followers: they get the whole answer while it is still connected', async () => {
    // The answer is shared (coalesce.maxBytes above it); the leader's client is never cut off within the test.
    const proxy = await startProxy({
      upstream: apiUrl,
      requestLog: true,
      coalesce: { maxBytes: 16 * 1024 * 1024 },
      client: { answerBufferBytes: 65_536, writeTimeoutMs: 600_000 },
    })
    const auth = basic('org-slow-leader')
    api.shut()
    const leader = deafClient(proxy, auth)
    let leaderClosed = false
    void leader.closed.then(() => (leaderClosed = true))
    try {
      const before = api.calls()
      await until(() => api.calls() > before, 'the leader reaches the API')
      const followers = Array.from({ length: 3 }, () =>
        send(proxy.url, COUNTRIES, { headers: { authorization: auth } }),
      )
      await until(async () => (await reuseStatus(proxy)).coalescing.followers >= 3, 'three followers')
      api.open()
      const got = await Promise.all(followers)
      expect(got.map((a) => a.status)).toEqual([200, 200, 200])
      expect(got.map((a) => a.text.length)).toEqual([BIG.length, BIG.length, BIG.length])
      expect(api.calls() - before).toBe(1)
      // Served at the API's pace, not the deaf leader's: it has not been cut off and is still there.
      expect(leaderClosed).toBe(false)
      // each log line is written when its client's side closes, just after the answer arrived
      await until(
        () => logsOf(proxy).filter((l) => l.outcome === 'coalesced').length === 3,
        'three coalesced log lines',
      )
    } finally {
      leader.socket.destroy()
      await proxy.close()
    }
  })

  it('a follower that never reads its shared answer is cut off after client.writeTimeoutMs (outcome client_timeout)', async () => {
    const proxy = await startProxy({
      upstream: apiUrl,
      requestLog: true,
      coalesce: { maxBytes: 16 * 1024 * 1024 },
      client: { writeTimeoutMs: 500 },
    })
    const auth = basic('org-deaf-follower')
    api.shut()
    const before = api.calls()
    const leading = send(proxy.url, COUNTRIES, { headers: { authorization: auth, 'x-request-id': 'the-leader' } })
    await until(() => api.calls() > before, 'the leader reaches the API')
    const follower = deafClient(proxy, auth)
    try {
      await until(async () => (await reuseStatus(proxy)).coalescing.followers >= 1, 'the follower')
      api.open()
      expect((await leading).text.length).toBe(BIG.length)
      await until(() => logsOf(proxy).some((l) => l.reqId !== 'the-leader'), "the follower's log line")
      expect(logsOf(proxy).find((l) => l.reqId !== 'the-leader')).toMatchObject({
        status: 200,
        outcome: 'client_timeout',
      })
      expect(api.calls() - before).toBe(1)
      // sluice closed the connection: once the client reads what reached it, it sees the end
      follower.socket.resume()
      await follower.closed
    } finally {
      follower.socket.destroy()
      await proxy.close()
    }
  })
})
