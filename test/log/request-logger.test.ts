import Fastify, { type FastifyInstance } from 'fastify'
import { Writable } from 'node:stream'
import { afterEach, describe, expect, it } from 'vitest'
import { lazyChildLoggerFactory } from '../../src/log/request-logger.js'
import { startSim, type Sim } from '../../src/sim/index.js'
import { buildApp } from '../../src/app.js'
import { loadSettings } from '../../src/config/load.js'
import { basic } from '../support/proxy.js'
import { send, until } from '../support/http.js'

const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

function capture(lines: string[]): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      )
      done()
    },
  })
}

describe('request loggers made on first use', () => {
  it('lines written through request.log carry the request id (and a child logger its own bindings)', async () => {
    const lines: string[] = []
    const app: FastifyInstance = Fastify({
      logger: { level: 'info', stream: capture(lines) },
      childLoggerFactory: lazyChildLoggerFactory,
      disableRequestLogging: true,
    })
    cleanups.push(() => app.close())
    app.get('/quiet', (_request, reply) => reply.send('ok'))
    app.get('/talks', (request, reply) => {
      request.log.info({ extra: 1 }, 'talking')
      request.log.child({ step: 'two' }).warn('nested')
      request.log.debug('below the level')
      return reply.send({ level: request.log.level })
    })
    app.get('/fails', (request, reply) => {
      request.log.error({ err: new Error('boom') }, 'boom')
      return reply.send('logged')
    })
    expect((await app.inject({ url: '/quiet', headers: { 'x-request-id': 'q1' } })).body).toBe('ok')
    expect(lines).toEqual([])
    const talks = await app.inject({ url: '/talks' })
    expect(talks.json()).toEqual({ level: 'info' })
    expect((await app.inject({ url: '/fails' })).body).toBe('logged')
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(parsed.map((l) => l.msg)).toEqual(['talking', 'nested', 'boom'])
    expect(parsed[0]).toMatchObject({ reqId: 'req-2', extra: 1 })
    expect(parsed[1]).toMatchObject({ reqId: 'req-2', step: 'two', level: 40 })
    expect(parsed[2]).toMatchObject({ reqId: 'req-3', level: 50 })
  })

  it('the proxy access line names the request id exactly once', async () => {
    const sim: Sim = await startSim()
    cleanups.push(() => sim.close())
    const lines: string[] = []
    const settings = loadSettings(
      {},
      { upstream: sim.apiUrl, host: '127.0.0.1', adminHost: '127.0.0.1', port: 0, adminPort: 0 },
    )
    const app = await buildApp(settings, { logStream: capture(lines) })
    cleanups.push(() => app.close())
    const { proxyUrl } = await app.listen()
    const answer = await send(proxyUrl, '/v2/campaigns', {
      headers: { authorization: basic('org1'), 'x-request-id': 'once-only' },
    })
    expect(answer.status).toBe(200)
    await until(() => lines.some((l) => l.includes('"msg":"request"')), 'the access line')
    // the raw text: JSON.parse would hide a doubled key
    const line = lines.find((l) => l.includes('"msg":"request"'))!
    expect(line.match(/"reqId"/g)).toHaveLength(1)
    expect(JSON.parse(line)).toMatchObject({ reqId: 'once-only', instance: 'org1' })
  })
})
