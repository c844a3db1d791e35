import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { basicAuth, startSim, type Sim } from '../support/sim.js'
import { startProxy, statusOf, type RunningProxy } from '../support/proxy.js'
import { send, until } from '../support/http.js'

describe('waiters are served first come, first served', () => {
  let sim: Sim
  let proxy: RunningProxy
  beforeAll(async () => {
    sim = await startSim({ latencyMs: 2 })
    proxy = await startProxy({ upstream: sim.apiUrl, requestLog: false })
  })
  afterAll(async () => {
    await proxy.close()
    await sim.close()
  })

  it('requests reach the API in the order they arrived at the proxy', async () => {
    const headers = (seq: number, extra: Record<string, string> = {}) => ({ authorization: basicAuth('org1'), 'x-test-seq': String(seq), ...extra })
    const first = send(proxy.url, '/v2/events/search', { method: 'POST', headers: headers(0, { 'x-sim-delay-ms': '3000' }), body: '{}' })
    await until(() => sim.stats().keys['org1 POST /events/search']?.inProgress === 1, 'the first request upstream')
    const rest: Promise<unknown>[] = []
    for (let seq = 1; seq <= 10; seq++) {
      rest.push(send(proxy.url, '/v2/events/search', { method: 'POST', headers: headers(seq), body: '{}' }))
      // Each waiter is in the queue before the next one is sent, so "arrival order" is unambiguous.
      await until(async () => (await statusOf(proxy, 'org1', 'POST /events/search'))?.queued === seq, `waiter ${seq} queued`)
    }
    await Promise.all([first, ...rest])
    const order = sim.stats().arrivals.filter((a) => a.endpoint === 'POST /events/search').map((a) => Number(a.seq))
    expect(order).toEqual(Array.from({ length: 11 }, (_, i) => i))
  })
})
