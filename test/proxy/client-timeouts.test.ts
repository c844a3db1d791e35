import { describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { basic, useSimAndProxy } from '../support/proxy.js'
import { rawExchange } from '../support/raw.js'

// Short timeouts so each phase's limit is reached quickly; the assertions are about which answer comes, not when.
const stack = useSimAndProxy(
  {},
  {
    client: {
      headersTimeoutMs: 400,
      requestTimeoutMs: 1_500,
      keepAliveTimeoutMs: 300,
      minBodyBytesPerSecond: 0,
      maxUrlBytes: 8_192,
      maxHeaderBytes: 16_384,
    },
  },
)

const codeOf = (body: string): string => (JSON.parse(body) as [{ code: string }])[0].code
const logOf = (instance: string): Record<string, unknown> | undefined =>
  stack.proxy.logs.find((l) => l.msg === 'request' && l.instance === instance)

describe('a timeout for every phase of a client request, and 414/431 for over-large heads', () => {
  it('headers that never finish: 408 SLUICE_REQUEST_TIMEOUT, logged as client_timeout', async () => {
    const timeouts = (): number =>
      stack.proxy.logs.filter((l) => l.msg === 'request' && l.status === 408 && l.outcome === 'client_timeout').length
    const before = timeouts()
    const answer = await rawExchange(
      stack.proxy.url,
      `GET /v2/accounts HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('org-slowhead')}\r\n`,
    )
    expect(answer.status).toBe(408)
    expect(codeOf(answer.body)).toBe('SLUICE_REQUEST_TIMEOUT')
    expect(answer.closed).toBe(true)
    // (the headers never ended, so no organisation is read from them)
    await until(() => timeouts() === before + 1, 'the log line')
  })

  it('a body that does not finish within the request timeout: 408, and the API never sees it', async () => {
    const answer = await rawExchange(stack.proxy.url, (socket) => {
      socket.write(
        `POST /v2/accounts HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('org-slowbody')}\r\nContent-Length: 100\r\n\r\n`,
      )
      const drip = setInterval(() => (socket.writable ? socket.write('x') : clearInterval(drip)), 100)
      socket.once('close', () => clearInterval(drip))
    })
    expect(answer.status).toBe(408)
    expect(codeOf(answer.body)).toBe('SLUICE_REQUEST_TIMEOUT')
    await until(() => logOf('org-slowbody') !== undefined, 'the log line')
    expect(logOf('org-slowbody')).toMatchObject({ status: 408, outcome: 'client_timeout' })
    expect(stack.sim.stats().keys['org-slowbody POST /accounts']).toBeUndefined()
  })

  it('an idle keep-alive connection is closed by sluice', async () => {
    const answer = await rawExchange(stack.proxy.url, 'GET /v2/campaigns HTTP/1.1\r\nHost: x\r\n\r\n')
    expect(answer.status).toBe(200)
    expect(answer.closed).toBe(true)
  })

  it('a request target over client.maxUrlBytes: 414 SLUICE_URL_TOO_LONG (below and above the header limit)', async () => {
    const mid = await send(stack.proxy.url, `/v2/accounts/${'a'.repeat(10_000)}`)
    expect(mid.status).toBe(414)
    expect(codeOf(mid.text)).toBe('SLUICE_URL_TOO_LONG')
    const huge = await rawExchange(
      stack.proxy.url,
      `GET /v2/accounts/${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    )
    expect(huge.status).toBe(414)
    expect(codeOf(huge.body)).toBe('SLUICE_URL_TOO_LONG')
  })

  it('headers over client.maxHeaderBytes: 431 SLUICE_HEADERS_TOO_LARGE', async () => {
    const answer = await rawExchange(
      stack.proxy.url,
      `GET /v2/accounts HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(64 * 1024)}\r\n\r\n`,
    )
    expect(answer.status).toBe(431)
    expect(codeOf(answer.body)).toBe('SLUICE_HEADERS_TOO_LARGE')
  })
})
