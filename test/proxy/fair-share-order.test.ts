import { describe, expect, it } from 'vitest'
import { basicAuth } from '../support/sim.js'
import { adminJson, statusOf, useSimAndProxy } from '../support/proxy.js'
import { send, until } from '../support/http.js'
import type { AppShare } from '../../src/limiter/types.js'

// Through the proxy: the app named by `x-sluice-app` reaches the limiter, and `fairness` settings
// decide the order (README "Fair share between apps").

describe('fair share between apps, through the proxy', () => {
  const stack = useSimAndProxy({ latencyMs: 2 }, { requestLog: false, fairness: { apps: { web: { weight: 2 } } } })

  it("a later app's requests reach the API ahead of a busy app's backlog, by weight; /status shows each app's share", async () => {
    const headers = (seq: string, app: string, extra: Record<string, string> = {}) => ({
      authorization: basicAuth('org1'),
      'x-test-seq': seq,
      'x-sluice-app': app,
      ...extra,
    })
    const first = send(stack.proxy.url, '/v2/events/search', {
      method: 'POST',
      headers: headers('first', 'batch', { 'x-sim-delay-ms': '1500' }),
      body: '{}',
    })
    await until(
      () => stack.sim.stats().keys['org1 POST /events/search']?.inProgress === 1,
      'the first request upstream',
    )
    const rest: Promise<unknown>[] = []
    const queue = async (seq: string, app: string, count: number): Promise<void> => {
      rest.push(send(stack.proxy.url, '/v2/events/search', { method: 'POST', headers: headers(seq, app), body: '{}' }))
      await until(
        async () => (await statusOf(stack.proxy, 'org1', 'POST /events/search'))?.queued === count,
        `${seq} queued`,
      )
    }
    for (let i = 1; i <= 6; i++) await queue(`batch${i}`, 'batch', i)
    await queue('web1', 'web', 7)
    await queue('web2', 'web', 8)
    const status = await adminJson<{ keys: { instance: string; endpoint: string; apps?: AppShare[] }[] }>(
      stack.proxy,
      '/status',
    )
    expect(status.keys.find((k) => k.endpoint === 'POST /events/search')?.apps).toEqual([
      { app: 'batch', held: 1, queued: 6 },
      { app: 'web', held: 0, queued: 2 },
    ])
    await Promise.all([first, ...rest])
    const order = stack.sim
      .stats()
      .arrivals.filter((a) => a.endpoint === 'POST /events/search')
      .map((a) => String(a.seq))
    // start tags: batch 0, 1, 2…; web (weight 2) 0, 0.5 — first come, first served would send both last
    expect(order).toEqual(['first', 'batch1', 'web1', 'web2', 'batch2', 'batch3', 'batch4', 'batch5', 'batch6'])
  })
})
