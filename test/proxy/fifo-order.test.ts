import { describe, expect, it } from 'vitest'
import { basicAuth } from '../support/sim.js'
import { statusOf, useSimAndProxy } from '../support/proxy.js'
import { send, until } from '../support/http.js'

describe('waiters are served first come, first served', () => {
  const stack = useSimAndProxy({ latencyMs: 2 }, { requestLog: false })

  it('requests reach the API in the order they arrived at the proxy', async () => {
    const headers = (seq: number, extra: Record<string, string> = {}) => ({
      authorization: basicAuth('org1'),
      'x-test-seq': String(seq),
      ...extra,
    })
    const first = send(stack.proxy.url, '/v2/events/search', {
      method: 'POST',
      headers: headers(0, { 'x-sim-delay-ms': '3000' }),
      body: '{}',
    })
    await until(
      () => stack.sim.stats().keys['org1 POST /events/search']?.inProgress === 1,
      'the first request upstream',
    )
    const rest: Promise<unknown>[] = []
    for (let seq = 1; seq <= 10; seq++) {
      rest.push(send(stack.proxy.url, '/v2/events/search', { method: 'POST', headers: headers(seq), body: '{}' }))
      // Each waiter is in the queue before the next one is sent, so "arrival order" is unambiguous.
      await until(
        async () => (await statusOf(stack.proxy, 'org1', 'POST /events/search'))?.queued === seq,
        `waiter ${seq} queued`,
      )
    }
    await Promise.all([first, ...rest])
    const order = stack.sim
      .stats()
      .arrivals.filter((a) => a.endpoint === 'POST /events/search')
      .map((a) => Number(a.seq))
    expect(order).toEqual(Array.from({ length: 11 }, (_, i) => i))
  })
})
