import { describe, expect, it, onTestFinished } from 'vitest'
import { basicAuth, keyStats, withSim } from '../support/sim.js'
import { startProxy, useSimAndProxy } from '../support/proxy.js'
import { send } from '../support/http.js'
import { parsePromText, valueOf } from '../metrics/prom-text.js'

describe('an upstream 429 goes back into the queue, never to the client', () => {
  const stack = useSimAndProxy(
    { rejectRatio: 0.3, latencyMs: 1 },
    { retry: { baseDelayMs: 5, maxDelayMs: 50, maxBufferBytes: 1024 } },
  )

  it('an API that answers 429 a third of the time: clients see none, the body is sent again intact', async () => {
    const body = JSON.stringify({ searchFields: [{ field: 'name', operator: 'EQUAL', value: 'x'.repeat(500) }] })
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        send(stack.proxy.url, '/v2/donations/search', {
          method: 'POST',
          headers: { authorization: basicAuth('org1'), 'content-type': 'application/json' },
          body,
        }),
      ),
    )
    expect(answers.map((a) => a.status)).toEqual(Array(40).fill(200))
    for (const a of answers) expect(a.json<{ body: string }>().body).toBe(body)
    const stats = keyStats(stack.sim, 'org1', 'POST /donations/search')!
    expect(stats.pushback429).toBeGreaterThan(0)
    expect(stats.requests).toBe(40 + stats.pushback429)
    expect(stats.maxInProgress).toBe(1)
    const lines = stack.proxy.logs.filter((l) => l.msg === 'request' && l.endpoint === 'POST /donations/search')
    expect(lines.reduce((n, l) => n + (l.retries as number), 0)).toBe(stats.pushback429)
    // the upstream's time is measured per attempt: every request the API saw, its 429s included
    const metrics = parsePromText(await (await fetch(`${stack.proxy.adminUrl}/metrics`)).text())
    expect(valueOf(metrics, 'sluice_upstream_duration_seconds_count', { endpoint: 'POST /donations/search' })).toBe(
      stats.requests,
    )
  })

  it('a body too large to keep is streamed; a 429 for it is answered 503 with Retry-After', async () => {
    const pushingBack = await withSim({ rejectRatio: 1 })
    const proxy2 = await startProxy({ upstream: pushingBack.apiUrl, retry: { maxBufferBytes: 1024 } })
    onTestFinished(() => proxy2.close())
    const big = 'y'.repeat(4096)
    const answer = await send(proxy2.url, '/v2/accounts', {
      method: 'POST',
      headers: { authorization: basicAuth('org2'), 'x-sim-retry-after': '7' },
      body: big,
    })
    expect(keyStats(pushingBack, 'org2', 'POST /accounts')).toMatchObject({ requests: 1, pushback429: 1 })
    expect(answer.status).toBe(503)
    expect(answer.headers['retry-after']).toBe('7')
    expect(answer.json()).toEqual([
      {
        code: 'SLUICE_UPSTREAM_BUSY',
        message:
          'The API answered 429 for POST /accounts and the request body was too large to keep for a retry; try again later',
      },
    ])
  })

  it('a large body that gets no 429 streams through whole', async () => {
    const calm = await withSim()
    const proxy3 = await startProxy({ upstream: calm.apiUrl, retry: { maxBufferBytes: 1024 } })
    onTestFinished(() => proxy3.close())
    const big = 'z'.repeat(50_000)
    const answer = await send(proxy3.url, '/v2/accounts', {
      method: 'POST',
      headers: { authorization: basicAuth('org2'), 'x-sim-status': '201' },
      body: big,
    })
    expect(answer.status).toBe(201)
    expect(answer.json<{ body: string }>().body.length).toBe(50_000)
  })
})
