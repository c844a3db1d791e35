import {
  createServer,
  request as httpRequest,
  Agent,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { Pool } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { forward, type ForwardCallbacks } from '../../src/proxy/forward.js'

const pools: Pool[] = []
const servers: Server[] = []
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()))
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    s.close()
  }
})

function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler)
  servers.push(server)
  return new Promise((r) =>
    server.listen(0, '127.0.0.1', () => r(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  )
}

const BIG = Buffer.alloc(3 * 1024 * 1024, 'abcdefghij')

async function upstream(): Promise<string> {
  return listen((req, res) => {
    const u = new URL(req.url!, 'http://x')
    if (u.pathname === '/chunked') {
      res.writeHead(200, { 'content-type': 'text/plain' })
      let off = 0
      const step = (): void => {
        while (off < BIG.length) {
          const next = BIG.subarray(off, off + 50_000)
          off += next.length
          if (!res.write(next)) return void res.once('drain', step)
        }
        res.end()
      }
      step()
    } else if (u.pathname === '/huge') {
      res.writeHead(200, { 'content-type': 'text/plain' })
      let left = 40
      const step = (): void => {
        while (left > 0) {
          left--
          if (!res.write(BIG)) return void res.once('drain', step)
        }
        res.end()
      }
      step()
    } else if (u.pathname === '/length') {
      res.writeHead(200, { 'content-length': BIG.length })
      res.end(BIG)
    } else if (u.pathname === '/204') {
      res.writeHead(204).end()
    } else if (u.pathname === '/304') {
      res.writeHead(304, { etag: '"x"' }).end()
    } else if (u.pathname === '/torn') {
      res.writeHead(200, { 'content-length': 1_000_000 })
      res.write(BIG.subarray(0, 100_000))
      setTimeout(() => res.destroy(), 50)
    } else {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 5 }).end('small')
    }
  })
}

async function front(
  up: string,
  limits: { bufferBytes: number; writeTimeoutMs: number },
  events: string[] = [],
): Promise<string> {
  const pool = new Pool(up, { connections: 4 })
  pools.push(pool)
  return listen((req, res) => {
    const cbs: ForwardCallbacks = {
      onHead: (status, headers) => {
        const h: Record<string, string | string[]> = {}
        for (const [k, v] of Object.entries(headers))
          if (v !== undefined && k !== 'connection' && k !== 'keep-alive' && k !== 'transfer-encoding') h[k] = v
        return h
      },
      onDone: (cut, failed) => void events.push(`done ${String(cut)} ${String(failed)}`),
      onClientCut: () => void events.push('client cut'),
    }
    forward(pool, { path: req.url!, method: req.method as 'GET' }, res, cbs, limits).catch((err: unknown) => {
      events.push(`rejected ${String(err)}`)
      res.destroy()
    })
  })
}

function get(
  url: string,
  o: { agent?: Agent; method?: string; slowMs?: number } = {},
): Promise<{ status: number; body: Buffer; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: o.agent, method: o.method ?? 'GET' }, (res) => {
      const chunks: Buffer[] = []
      if (o.slowMs !== undefined) {
        res.pause()
        setTimeout(() => res.resume(), o.slowMs)
      }
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks), complete: res.complete }))
      res.on('error', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks), complete: false }))
      res.on('aborted', () => undefined)
    })
    req.on('error', reject)
    req.end()
  })
}

describe('answers held to the end of the turn (src/proxy/answer-writes.ts): every case still arrives whole or cut', () => {
  it('keep-alive: sequential big answers on one socket, small buffer, slow reader', async () => {
    const up = await upstream()
    const url = await front(up, { bufferBytes: 16 * 1024, writeTimeoutMs: 10_000 })
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    for (const path of ['/chunked', '/length', '/small', '/chunked', '/length']) {
      const a = await get(url + path, { agent, slowMs: 100 })
      expect(a.status).toBe(200)
      expect(a.body.length).toBe(path === '/small' ? 5 : BIG.length)
    }
    // in parallel on one socket each
    const all = await Promise.all(['/chunked', '/length', '/chunked', '/small'].map((p) => get(url + p, { agent })))
    expect(all.map((a) => a.body.length)).toEqual([BIG.length, BIG.length, BIG.length, 5])
    agent.destroy()
  }, 30_000)

  it('HEAD, 204, 304', async () => {
    const up = await upstream()
    const url = await front(up, { bufferBytes: 16 * 1024, writeTimeoutMs: 10_000 })
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    expect((await get(url + '/204', { agent })).status).toBe(204)
    expect((await get(url + '/304', { agent })).status).toBe(304)
    const head = await get(url + '/length', { agent, method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.body.length).toBe(0)
    expect((await get(url + '/small', { agent })).body.toString()).toBe('small')
    agent.destroy()
  })

  it('pipelined requests on one socket', async () => {
    const up = await upstream()
    const url = new URL(await front(up, { bufferBytes: 16 * 1024, writeTimeoutMs: 10_000 }))
    const raw = await new Promise<Buffer>((resolve) => {
      const s = connect(Number(url.port), '127.0.0.1', () => {
        s.write(
          'GET /small HTTP/1.1\r\nHost: x\r\n\r\nGET /204 HTTP/1.1\r\nHost: x\r\n\r\nGET /small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
        )
      })
      const chunks: Buffer[] = []
      s.on('data', (c: Buffer) => chunks.push(c))
      s.on('close', () => resolve(Buffer.concat(chunks)))
    })
    const text = raw.toString()
    expect(text.match(/HTTP\/1.1 200/g)?.length).toBe(2)
    expect(text.match(/HTTP\/1.1 204/g)?.length).toBe(1)
    expect(text.endsWith('small')).toBe(true)
  })

  it('torn upstream mid-body: the client sees a cut, not a whole answer', async () => {
    const up = await upstream()
    const events: string[] = []
    const url = await front(up, { bufferBytes: 16 * 1024, writeTimeoutMs: 10_000 }, events)
    const a = await get(url + '/torn').catch(() => ({ status: 0, body: Buffer.alloc(0), complete: false }))
    expect(a.complete).toBe(false)
    expect(events).toContain('done true true')
  })

  it('a client that never reads is cut off in time; the permit came back', async () => {
    const up = await upstream()
    const events: string[] = []
    const url = new URL(await front(up, { bufferBytes: 16 * 1024, writeTimeoutMs: 300 }, events))
    const s = connect(Number(url.port), '127.0.0.1', () => {
      s.write('GET /huge HTTP/1.1\r\nHost: x\r\n\r\n')
      s.pause()
    })
    s.on('error', () => undefined)
    const t0 = Date.now()
    while (!(events.includes('client cut') && events.some((e) => e.startsWith('done'))) && Date.now() - t0 < 8000)
      await new Promise((r) => setTimeout(r, 20))
    s.destroy()
    expect(events).toContain('client cut')
    expect(events.some((e) => e.startsWith('done'))).toBe(true)
  }, 15_000)
})
