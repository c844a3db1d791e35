import Fastify, { type FastifyInstance } from 'fastify'
import { hostname } from 'node:os'
import { Writable } from 'node:stream'
import { request as undiciRequest } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  accessLogFields,
  accessLogLine,
  LOG_SERIALIZERS,
  REDACT_CENSOR,
  REDACT_PATHS,
} from '../../src/log/access-log.js'
import { record } from '../metrics/records.js'

const API_KEY = 'k3y-0123456789abcdef'
const CREDENTIALS = Buffer.from(`org1:${API_KEY}`).toString('base64')
const BASIC = `Basic ${CREDENTIALS}`
const COOKIE = 'session=c00k1e-value'
const SECRETS = [API_KEY, CREDENTIALS, 'c00k1e-value', 'hunter2']

let app: FastifyInstance | undefined
afterEach(async () => {
  await app?.close()
  app = undefined
})

/** A real Fastify server whose pino logger uses our redaction, writing into `lines`. */
function server(lines: string[]): FastifyInstance {
  const stream = new Writable({
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
  return Fastify({
    logger: {
      level: 'info',
      stream,
      redact: { paths: REDACT_PATHS, censor: REDACT_CENSOR },
      serializers: LOG_SERIALIZERS,
    },
  })
}

describe('pino with REDACT_PATHS', () => {
  it('never prints a Basic-auth header, an API key, a cookie or a password, including in logged errors', async () => {
    const lines: string[] = []
    app = server(lines)
    app.post('/v2/accounts/search', async (request) => {
      // what a careless handler or an upstream-error path logs
      request.log.info({ request: { method: request.method, headers: request.headers } }, 'incoming')
      request.log.info({ headers: request.headers }, 'bare headers')
      const upstreamHeaders = {
        Authorization: request.headers.authorization,
        'X-API-Key': API_KEY,
        accept: 'application/json',
      }
      try {
        // a real undici failure (nothing listens on port 9 of loopback)
        await undiciRequest('http://127.0.0.1:9/v2/accounts/search', { method: 'POST', headers: upstreamHeaders })
      } catch (cause) {
        const err = Object.assign(new Error('upstream failed', { cause }), {
          options: { method: 'POST', headers: upstreamHeaders },
          config: { headers: { Authorization: BASIC }, auth: { username: 'org1', password: 'hunter2' } },
          rawHeaders: ['Cookie', COOKIE, 'Accept', 'application/json'],
        })
        ;(cause as Error & { requestHeaders?: unknown }).requestHeaders = { authorization: BASIC }
        request.log.error({ err, upstream: { headers: upstreamHeaders } }, 'upstream error')
        request.log.error(err)
        request.log.warn({ password: 'hunter2', settings: { apiKey: API_KEY } }, 'settings')
      }
      return { ok: true }
    })
    const address = await app.listen({ port: 0, host: '127.0.0.1' })
    const res = await fetch(`${address}/v2/accounts/search`, {
      method: 'POST',
      headers: { authorization: BASIC, cookie: COOKIE, 'x-api-key': API_KEY, 'content-type': 'application/json' },
      body: '{}',
    })
    expect(res.status).toBe(200)

    const text = lines.join('\n')
    for (const secret of SECRETS) expect(text).not.toContain(secret)
    // ...and it is redaction at work, not lines that never held the fields
    /** a field of the line logged with `msg`, by its path */
    const field = (msg: string, ...path: string[]): unknown =>
      path.reduce<unknown>(
        (v, k) => (v as Record<string, unknown> | undefined)?.[k],
        JSON.parse(lines.find((l) => l.includes(`"msg":"${msg}"`)) ?? '{}'),
      )
    expect(field('incoming', 'request', 'headers', 'authorization')).toBe(REDACT_CENSOR)
    expect(field('incoming', 'request', 'headers', 'cookie')).toBe(REDACT_CENSOR)
    expect(field('incoming', 'request', 'headers', 'x-api-key')).toBe(REDACT_CENSOR)
    expect(field('incoming', 'request', 'headers', 'content-type')).toBe('application/json')
    expect(field('bare headers', 'headers', 'authorization')).toBe(REDACT_CENSOR)
    expect(field('upstream error', 'upstream', 'headers', 'Authorization')).toBe(REDACT_CENSOR)
    expect(field('upstream error', 'upstream', 'headers', 'X-API-Key')).toBe(REDACT_CENSOR)
    expect(field('upstream error', 'upstream', 'headers', 'accept')).toBe('application/json')
    // the error keeps pino's shape, scrubbed at every depth
    expect(field('upstream error', 'err', 'type')).toBe('Error')
    expect(field('upstream error', 'err', 'message')).toBe('upstream failed')
    expect(field('upstream error', 'err', 'stack')).toMatch(/^Error: upstream failed\n/)
    expect(field('upstream error', 'err', 'options', 'headers', 'Authorization')).toBe(REDACT_CENSOR)
    expect(field('upstream error', 'err', 'config', 'headers', 'Authorization')).toBe(REDACT_CENSOR)
    expect(field('upstream error', 'err', 'config', 'auth')).toBe(REDACT_CENSOR)
    expect(field('upstream error', 'err', 'rawHeaders')).toEqual([
      'Cookie',
      REDACT_CENSOR,
      'Accept',
      'application/json',
    ])
    expect(field('upstream error', 'err', 'cause', 'code')).toBe('ECONNREFUSED')
    expect(field('upstream error', 'err', 'cause', 'requestHeaders', 'authorization')).toBe(REDACT_CENSOR)
    expect(field('upstream failed', 'err', 'options', 'headers', 'X-API-Key')).toBe(REDACT_CENSOR)
    expect(field('settings', 'password')).toBe(REDACT_CENSOR)
    expect(field('settings', 'settings', 'apiKey')).toBe(REDACT_CENSOR)
  })
})

describe('accessLogFields', () => {
  it('is the one line per request: ids, endpoint template, status, times in ms, retries, outcome, versions', () => {
    const fields = accessLogFields(
      record({
        requestId: 'abc-123',
        instance: 'org7',
        app: 'donor-sync',
        endpoint: 'POST /accounts/search',
        method: 'POST',
        status: 200,
        outcome: 'forwarded',
        version: '2.9',
        upstreamVersion: '2.10',
        totalSeconds: 1.23456,
        queueSeconds: 1.0004,
        upstreamSeconds: 0.23416,
        retries: 2,
        upstream429s: 2,
      }),
    )
    expect(fields).toEqual({
      reqId: 'abc-123',
      instance: 'org7',
      app: 'donor-sync',
      endpoint: 'POST /accounts/search',
      status: 200,
      outcome: 'forwarded',
      version: '2.9',
      upstreamVersion: '2.10',
      totalMs: 1234.6,
      queueMs: 1000.4,
      upstreamMs: 234.2,
      socketWaitMs: 0,
      retries: 2,
      upstream429s: 2,
    })
  })
})

describe('accessLogLine', () => {
  it("is accessLogFields as one JSON line in pino's shape, for plain and for awkward values", () => {
    const records = [
      record(),
      record({
        app: 'donor-sync',
        version: '2.9',
        upstreamVersion: '2.10',
        retries: 1,
        upstream429s: 1,
        versionWarnings: ['2.9 rewritten to 2.10'],
      }),
      // what clients may put in the instance, app, request id and version: quotes, backslashes, control and non-ASCII characters
      record({
        requestId: 'a"b\\c',
        instance: 'ørg "quoted"',
        app: 'tab\there\u0001',
        version: 'x\ny',
        upstreamVersion: '\u2028',
        status: 0,
        outcome: 'client_aborted',
      }),
    ]
    for (const r of records) {
      const line = accessLogLine(r, 1_795_000_000_000)
      expect(line.endsWith('}\n')).toBe(true)
      expect(line.slice(0, -1)).not.toContain('\n')
      const parsed = JSON.parse(line) as Record<string, unknown>
      const fields = accessLogFields(r)
      const defined = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined))
      expect(parsed).toEqual({
        level: 30,
        time: 1_795_000_000_000,
        pid: process.pid,
        hostname: hostname(),
        ...defined,
        ...(r.versionWarnings?.length ? { versionWarnings: r.versionWarnings } : {}),
        msg: 'request',
      })
      // and in pino's key order: level, time, pid, hostname, the fields, msg
      expect(Object.keys(parsed)).toEqual([
        'level',
        'time',
        'pid',
        'hostname',
        ...Object.keys(defined),
        ...(r.versionWarnings?.length ? ['versionWarnings'] : []),
        'msg',
      ])
    }
  })
})
