import { createServer } from 'node:net'
import { describe, expect, it } from 'vitest'
import {} from '../support/sim.js'
import { adminJson, startProxy, useSimAndProxy } from '../support/proxy.js'
import { send } from '../support/http.js'

describe('upstream failures: 504 for timeouts, 502 for connection failures, permits come back', () => {
  const stack = useSimAndProxy({}, { upstreamTimeouts: { headersMs: 300 } })

  it('no answer within the headers timeout: 504 SLUICE_UPSTREAM_TIMEOUT', async () => {
    const answer = await send(stack.proxy.url, '/v2/accounts/search', {
      method: 'POST',
      headers: { 'x-sim-hang': '1' },
      body: '{}',
    })
    expect(answer.status).toBe(504)
    expect(answer.json()).toEqual([
      { code: 'SLUICE_UPSTREAM_TIMEOUT', message: 'The API did not answer in time: UND_ERR_HEADERS_TIMEOUT' },
    ])
    expect((await adminJson<{ keys: unknown[] }>(stack.proxy, '/status')).keys).toEqual([])
  })

  it('the upstream drops the connection: 502 SLUICE_UPSTREAM_UNREACHABLE', async () => {
    const answer = await send(stack.proxy.url, '/v2/accounts/search', {
      method: 'POST',
      headers: { 'x-sim-destroy': '1' },
      body: '{}',
    })
    expect(answer.status).toBe(502)
    expect(answer.json<[{ code: string }]>()[0].code).toBe('SLUICE_UPSTREAM_UNREACHABLE')
    expect((await adminJson<{ keys: unknown[] }>(stack.proxy, '/status')).keys).toEqual([])
    const line = stack.proxy.logs.findLast((l) => l.msg === 'request')
    expect(line).toMatchObject({ outcome: 'upstream_error', status: 502 })
  })

  it('nothing listens upstream: 502 with the error shape', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port
        srv.close(() => resolve(p))
      })
    })
    const orphan = await startProxy({ upstream: `http://127.0.0.1:${port}/v2` })
    try {
      const answer = await send(orphan.url, '/v2/campaigns')
      expect(answer.status).toBe(502)
      expect(answer.json()).toEqual([
        { code: 'SLUICE_UPSTREAM_UNREACHABLE', message: 'The API could not be reached: ECONNREFUSED' },
      ])
    } finally {
      await orphan.close()
    }
  })
})
