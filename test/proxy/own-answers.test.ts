import { describe, expect, it } from 'vitest'
import { parsePromText, select } from '../metrics/prom-text.js'
import { send, until } from '../support/http.js'
import { basic, useSimAndProxy } from '../support/proxy.js'
import { rawExchange } from '../support/raw.js'

const stack = useSimAndProxy()

const errorShape = (body: string, code: string): void => {
  expect(JSON.parse(body)).toEqual([{ code, message: expect.any(String) as string }])
}

async function requestsCounted(labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(stack.proxy.adminUrl + '/metrics')).text()
  return select(parsePromText(text), 'sluice_requests_total', labels).reduce((n, s) => n + s.value, 0)
}

const logLine = (pred: (l: Record<string, unknown>) => boolean): Record<string, unknown> | undefined =>
  stack.proxy.logs.find((l) => l.msg === 'request' && pred(l))

describe('every answer sluice gives itself has the error shape, a fitting status, a log line and a count', () => {
  it('a method no route has (TRACE, PROPFIND): 405 SLUICE_METHOD_NOT_ALLOWED with Allow, counted', async () => {
    for (const method of ['TRACE', 'PROPFIND']) {
      const answer = await send(stack.proxy.url, '/v2/accounts', { method, headers: { authorization: basic('org-m') } })
      expect(answer.status).toBe(405)
      expect(answer.headers.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS')
      errorShape(answer.text, 'SLUICE_METHOD_NOT_ALLOWED')
    }
    await until(
      async () => (await requestsCounted({ org: 'org-m', code: '405', outcome: 'bad_request' })) === 2,
      'both counted',
    )
  })

  it('CONNECT: 405 in the error shape instead of a silent close', async () => {
    const answer = await rawExchange(
      stack.proxy.url,
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
    )
    expect(answer.status).toBe(405)
    errorShape(answer.body, 'SLUICE_METHOD_NOT_ALLOWED')
  })

  it('a URL Fastify cannot decode (/v2/accounts/%zz) is counted against the organisation it names', async () => {
    const answer = await send(stack.proxy.url, '/v2/accounts/%zz', { headers: { authorization: basic('org-zz') } })
    expect(answer.status).toBe(400)
    errorShape(answer.text, 'SLUICE_BAD_PATH_ENCODING')
    await until(
      async () => (await requestsCounted({ org: 'org-zz', code: '400', outcome: 'bad_request' })) === 1,
      'counted with its org',
    )
    expect(logLine((l) => l.instance === 'org-zz')).toMatchObject({
      status: 400,
      outcome: 'bad_request',
      endpoint: 'unmatched',
    })
  })

  it('a path the catalog refuses is counted with the organisation, not _invalid', async () => {
    const answer = await send(stack.proxy.url, '/v2/accounts/%2e%2e/x', {
      headers: { authorization: basic('org-dots') },
    })
    expect(answer.status).toBe(400)
    await until(async () => (await requestsCounted({ org: 'org-dots', code: '400' })) === 1, 'counted with its org')
  })

  it('a smuggling attempt (Content-Length with Transfer-Encoding): 400, a log line and a count, nothing reaches the API', async () => {
    const before = stack.sim.stats()
    const answer = await rawExchange(
      stack.proxy.url,
      `POST /v2/accounts HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('org-smuggle')}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /v2/accounts/1 HTTP/1.1\r\nHost: x\r\n\r\n`,
    )
    expect(answer.status).toBe(400)
    errorShape(answer.body, 'SLUICE_BAD_REQUEST')
    await until(() => logLine((l) => l.instance === 'org-smuggle') !== undefined, 'the log line')
    expect(logLine((l) => l.instance === 'org-smuggle')).toMatchObject({ status: 400, outcome: 'bad_request' })
    expect(await requestsCounted({ org: 'org-smuggle', code: '400', outcome: 'bad_request' })).toBe(1)
    expect(Object.keys(stack.sim.stats().keys)).toEqual(Object.keys(before.keys))
  })

  it('bad chunked encoding found mid-body: the log says 400 bad_request (what the client got), not 0 client_aborted', async () => {
    const answer = await rawExchange(
      stack.proxy.url,
      `POST /v2/accounts HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('org-chunk')}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZ\r\n`,
    )
    expect(answer.status).toBe(400)
    errorShape(answer.body, 'SLUICE_BAD_REQUEST')
    await until(() => logLine((l) => l.instance === 'org-chunk') !== undefined, 'the log line')
    expect(logLine((l) => l.instance === 'org-chunk')).toMatchObject({ status: 400, outcome: 'bad_request' })
    expect(await requestsCounted({ org: 'org-chunk', code: '400', outcome: 'bad_request' })).toBe(1)
  })

  it('bad bytes after a whole request (sent after Connection: close) do not spoil its answer', async () => {
    const answer = await rawExchange(
      stack.proxy.url,
      `GET /v2/campaigns HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('org-after')}\r\nConnection: close\r\n\r\nG\x00ARBAGE / HTTP/1.1\r\n\r\n`,
    )
    expect(answer.status).toBe(200)
    expect(answer.closed).toBe(true)
    await until(() => logLine((l) => l.instance === 'org-after') !== undefined, 'the log line')
    expect(logLine((l) => l.instance === 'org-after')).toMatchObject({ status: 200, outcome: 'forwarded' })
  })

  it('the admin port: unknown paths 404, a wrong method 405, an undecodable URL 400, all in the error shape', async () => {
    const unknown = await send(stack.proxy.adminUrl, '/nope')
    expect(unknown.status).toBe(404)
    errorShape(unknown.text, 'SLUICE_NOT_FOUND')
    const wrongMethod = await send(stack.proxy.adminUrl, '/status', { method: 'POST' })
    expect(wrongMethod.status).toBe(405)
    errorShape(wrongMethod.text, 'SLUICE_METHOD_NOT_ALLOWED')
    const trace = await send(stack.proxy.adminUrl, '/metrics', { method: 'TRACE' })
    expect(trace.status).toBe(405)
    const bad = await send(stack.proxy.adminUrl, '/status/%zz')
    expect(bad.status).toBe(400)
    errorShape(bad.text, 'SLUICE_BAD_PATH_ENCODING')
    const raw = await rawExchange(
      stack.proxy.adminUrl,
      'GET /status HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n',
    )
    expect(raw.status).toBe(400)
    errorShape(raw.body, 'SLUICE_BAD_REQUEST')
  })
})
