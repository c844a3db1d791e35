import { createServer, IncomingMessage, request as httpRequest, ServerResponse, type Server } from 'node:http'
import { Socket, type AddressInfo } from 'node:net'
import { Pool } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { forward, type ForwardCallbacks } from '../../src/proxy/forward.js'
import { basicAuth, withSim } from '../support/sim.js'

// A permit freed by an answer of the API goes back before that answer is written to its client, and
// the request it lets start is written to the API before that answer too: undici writes a request on
// a reused connection from a setImmediate, and the clients' answers of the turn wait behind it
// (src/proxy/answer-writes.ts). The answer still arrives whole.

const ANSWER_LIMITS = { bufferBytes: 4 * 1024 * 1024, writeTimeoutMs: 30_000 }
const pools: Pool[] = []
const servers: Server[] = []
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()))
  for (const s of servers.splice(0)) s.close()
})

const options = (apiUrl: string, n: number) => ({
  path: `${new URL(apiUrl).pathname}/accounts/${n}/contacts`,
  method: 'GET' as const,
  headers: { authorization: basicAuth('1001') },
})

/** Passes the answer on to the client. */
const passOn = (onDone: () => void): ForwardCallbacks => ({
  onHead: () => ({ 'content-type': 'application/json' }),
  onDone,
  onClientCut: () => undefined,
})
/** Reads the answer out and drops it. */
const drop = (onDone: () => void): ForwardCallbacks => ({
  onHead: () => undefined,
  onDone,
  onClientCut: () => undefined,
})
/** A response for the answers dropped (nothing is written to it). */
const unused = (): ServerResponse => new ServerResponse(new IncomingMessage(new Socket()))

/** GET `url`, the whole body as text. */
function get(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    httpRequest(url, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => resolve(body))
    })
      .on('error', reject)
      .end()
  })
}

describe("the client's answer and the next request to the API", () => {
  it('the permit goes back, and the request it starts is written upstream, before the answer is written to its client; the answer arrives whole', async () => {
    const sim = await withSim()
    // two connections, both used before: the next request reuses the idle one, as under load
    const pool = new Pool(sim.url, { connections: 2 })
    pools.push(pool)
    await Promise.all(
      [0, 0].map(
        () =>
          new Promise<void>((done) => void forward(pool, options(sim.apiUrl, 0), unused(), drop(done), ANSWER_LIMITS)),
      ),
    )
    await new Promise((r) => setTimeout(r, 10))
    const events: string[] = []
    let first: ServerResponse | undefined
    let answerLeftAtNextSend: boolean | undefined
    const next = new Promise<void>((resolve) => {
      const server = createServer((_req, res) => {
        first = res
        res.on('finish', () => events.push('answer written'))
        void forward(
          pool,
          options(sim.apiUrl, 1),
          res,
          passOn(() => {
            events.push('released')
            // the waiter the release granted resumes a few promise hops later, as the limiter's does
            void Promise.resolve()
              .then(() => undefined)
              .then(() => {
                void forward(
                  pool,
                  options(sim.apiUrl, 2),
                  unused(),
                  {
                    ...drop(() => resolve()),
                    beforeSend: () => {
                      events.push('next request sent')
                      answerLeftAtNextSend = first!.writableFinished
                      return undefined
                    },
                  },
                  ANSWER_LIMITS,
                )
              })
          }),
          ANSWER_LIMITS,
        )
      })
      servers.push(server)
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo
        void get(`http://127.0.0.1:${port}/`).then((body) => {
          events.push('client has the answer')
          expect(JSON.parse(body)).toMatchObject({ path: '/accounts/1/contacts' })
        })
      })
    })
    await next
    await new Promise<void>((resolve) => {
      const check = (): void => void (events.includes('client has the answer') ? resolve() : setTimeout(check, 5))
      check()
    })
    expect(answerLeftAtNextSend).toBe(false)
    expect(events.indexOf('released')).toBeLessThan(events.indexOf('next request sent'))
    expect(events.indexOf('next request sent')).toBeLessThan(events.indexOf('answer written'))
  })
})
