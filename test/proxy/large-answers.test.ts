import { createHash } from 'node:crypto'
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { basic, startProxy, statusOf, type RunningProxy } from '../support/proxy.js'
import { until } from '../support/http.js'

const CHUNK = Buffer.alloc(64 * 1024, 'sluice ')
const CHUNKS = 128 // 8 MiB: far more than the socket buffers between API, proxy and client hold
const EXPECTED_SHA = (() => {
  const h = createHash('sha256')
  for (let i = 0; i < CHUNKS; i++) h.update(CHUNK)
  return h.digest('hex')
})()
const CAMPAIGNS = 'GET /campaigns'

/** An API stand-in with big answers: `x-pace-ms` spaces the chunks out, `x-break-after` cuts the answer off. */
function startBigApi(): Promise<{ server: Server; url: string; finished: () => number; inProgress: () => number }> {
  let finished = 0
  let inProgress = 0
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    inProgress++
    res.once('close', () => {
      inProgress--
      if (res.writableFinished) finished++
    })
    const pace = Number(req.headers['x-pace-ms'] ?? 0)
    const breakAfter = Number(req.headers['x-break-after'] ?? CHUNKS + 1)
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(CHUNK.length * CHUNKS) })
    let sent = 0
    const next = (): void => {
      while (sent < CHUNKS) {
        if (sent === breakAfter) return void res.destroy()
        sent++
        const more = res.write(CHUNK)
        if (sent === CHUNKS) return void res.end()
        if (pace > 0) return void setTimeout(next, pace)
        if (!more) return void res.once('drain', next)
      }
    }
    next()
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      resolve({ server, url: `http://127.0.0.1:${port}/v2`, finished: () => finished, inProgress: () => inProgress })
    }),
  )
}

/** GET through the proxy; the client may read slowly, or hang up after `hangUpAfterBytes`. */
function get(base: string, headers: Record<string, string>, o: { slow?: boolean; hangUpAfterBytes?: number } = {}) {
  const url = new URL(base)
  return new Promise<{ status: number; bytes: number; sha: string; aborted: boolean }>((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: '/v2/campaigns', headers, agent: false },
      (res) => {
        const hash = createHash('sha256')
        let bytes = 0
        res.on('data', (c: Buffer) => {
          hash.update(c)
          bytes += c.length
          if (o.hangUpAfterBytes !== undefined && bytes >= o.hangUpAfterBytes) {
            req.destroy()
            resolve({ status: res.statusCode ?? 0, bytes, sha: '', aborted: true })
          } else if (o.slow) {
            // a slow reader: the proxy must hold the API back rather than buffer the whole answer
            res.pause()
            setTimeout(() => res.resume(), 2)
          }
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, sha: hash.digest('hex'), aborted: false }))
        res.on('aborted', () => resolve({ status: res.statusCode ?? 0, bytes, sha: '', aborted: true }))
        res.on('error', () => resolve({ status: res.statusCode ?? 0, bytes, sha: '', aborted: true }))
      },
    )
    req.on('error', (err) => (o.hangUpAfterBytes === undefined ? reject(err) : undefined))
    req.end()
  })
}

describe('large answers stream through with back-pressure, and the permit follows the API', () => {
  let api: Awaited<ReturnType<typeof startBigApi>>
  let proxy: RunningProxy
  beforeAll(async () => {
    api = await startBigApi()
    // GET /campaigns at limit 1, so a held permit shows as a queued second request
    proxy = await startProxy({ upstream: api.url, limits: { overrides: { [CAMPAIGNS]: 1 } } })
  })
  afterAll(async () => {
    await proxy.close()
    await new Promise((r) => api.server.close(r))
  })

  it('a slow reader gets every byte of an 8 MiB answer, in order', async () => {
    const answer = await get(proxy.url, { authorization: basic('org1') }, { slow: true })
    expect(answer).toMatchObject({ status: 200, bytes: CHUNK.length * CHUNKS, sha: EXPECTED_SHA, aborted: false })
    await until(async () => (await statusOf(proxy, 'org1', CAMPAIGNS)) === undefined, 'the permit back')
  })

  it('a client that hangs up mid-answer: the permit stays taken until the API has sent it all', async () => {
    const finishedBefore = api.finished()
    const cut = await get(proxy.url, { authorization: basic('org2'), 'x-pace-ms': '5' }, { hangUpAfterBytes: 1 })
    expect(cut.aborted).toBe(true)
    // The API is still sending (128 chunks, 5 ms apart): the permit is still held.
    expect(api.inProgress()).toBe(1)
    expect(await statusOf(proxy, 'org2', CAMPAIGNS)).toMatchObject({ inFlight: 1 })
    await until(() => api.finished() === finishedBefore + 1, 'the API to finish its answer')
    await until(async () => (await statusOf(proxy, 'org2', CAMPAIGNS)) === undefined, 'the permit back')
    await until(() => proxy.logs.some((l) => l.msg === 'request' && l.instance === 'org2'), 'the access log line')
    expect(proxy.logs.find((l) => l.msg === 'request' && l.instance === 'org2')).toMatchObject({
      outcome: 'client_aborted',
      status: 0,
    })
  })

  it('an API that breaks off mid-answer: the client sees the answer cut short, the permit comes back', async () => {
    const cut = await get(proxy.url, { authorization: basic('org3'), 'x-break-after': '4' })
    expect(cut).toMatchObject({ status: 200, aborted: true })
    expect(cut.bytes).toBeLessThan(CHUNK.length * CHUNKS)
    await until(async () => (await statusOf(proxy, 'org3', CAMPAIGNS)) === undefined, 'the permit back')
    await until(() => proxy.logs.some((l) => l.msg === 'request' && l.instance === 'org3'), 'the access log line')
    expect(proxy.logs.find((l) => l.msg === 'request' && l.instance === 'org3')).toMatchObject({
      outcome: 'upstream_error',
      status: 200,
    })
    // and the key still works
    expect((await get(proxy.url, { authorization: basic('org3') })).sha).toBe(EXPECTED_SHA)
  })
})
