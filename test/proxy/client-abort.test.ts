import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats } from '../support/sim.js'
import { adminJson, statusOf, useSimAndProxy } from '../support/proxy.js'
import { send, until } from '../support/http.js'

const SEARCH = 'POST /accounts/search'

describe('a client that hangs up', () => {
  const stack = useSimAndProxy()

  it('while queued leaves the queue at once and never reaches the API', async () => {
    stack.sim.reset()
    const held = send(stack.proxy.url, '/v2/accounts/search', {
      method: 'POST',
      headers: { authorization: basicAuth('org1'), 'x-sim-delay-ms': '1500' },
      body: '{}',
    })
    await until(() => keyStats(stack.sim, 'org1', SEARCH)?.inProgress === 1, 'first request upstream')
    const ac = new AbortController()
    const waiting = send(stack.proxy.url, '/v2/accounts/search', {
      method: 'POST',
      headers: { authorization: basicAuth('org1'), 'x-test-seq': 'aborted' },
      body: '{}',
      signal: ac.signal,
    })
    await until(async () => (await statusOf(stack.proxy, 'org1', SEARCH))?.queued === 1, 'second request queued')
    ac.abort()
    await expect(waiting).rejects.toThrow()
    await until(
      async () => ((await statusOf(stack.proxy, 'org1', SEARCH))?.queued ?? 0) === 0,
      'the aborted waiter to leave',
    )
    expect((await held).status).toBe(200)
    await until(
      async () => (await adminJson<{ keys: unknown[] }>(stack.proxy, '/status')).keys.length === 0,
      'no key left',
    )
    expect(stack.sim.stats().arrivals.map((a) => a.seq)).not.toContain('aborted')
    expect(keyStats(stack.sim, 'org1', SEARCH)?.requests).toBe(1)
    const line = stack.proxy.logs.find((l) => l.msg === 'request' && l.outcome === 'client_aborted')
    expect(line).toMatchObject({ endpoint: SEARCH, instance: 'org1', status: 0 })
  })

  it('while upstream does not free the permit: it comes back when the API answers', async () => {
    stack.sim.reset()
    const ac = new AbortController()
    const inFlight = send(stack.proxy.url, '/v2/accounts/search', {
      method: 'POST',
      headers: { authorization: basicAuth('org2'), 'x-sim-delay-ms': '2000' },
      body: '{}',
      signal: ac.signal,
    })
    await until(() => keyStats(stack.sim, 'org2', SEARCH)?.inProgress === 1, 'request upstream')
    const next = send(stack.proxy.url, '/v2/accounts/search', {
      method: 'POST',
      headers: { authorization: basicAuth('org2') },
      body: '{}',
    })
    await until(async () => (await statusOf(stack.proxy, 'org2', SEARCH))?.queued === 1, 'next request queued')
    ac.abort()
    await expect(inFlight).rejects.toThrow()
    // The API is still working on the abandoned request, so the next one must still wait.
    expect(keyStats(stack.sim, 'org2', SEARCH)?.inProgress).toBe(1)
    expect(await statusOf(stack.proxy, 'org2', SEARCH)).toMatchObject({ inFlight: 1, queued: 1 })
    expect((await next).status).toBe(200)
    expect(keyStats(stack.sim, 'org2', SEARCH)).toMatchObject({ maxInProgress: 1, requests: 2, rejected429: 0 })
    await until(
      async () => (await adminJson<{ keys: unknown[] }>(stack.proxy, '/status')).keys.length === 0,
      'no permit leaked',
    )
  })

  it('many aborts while queued and in flight leak nothing', async () => {
    stack.sim.reset()
    const aborts = Array.from({ length: 60 }, (_, i) => {
      const ac = new AbortController()
      const p = send(stack.proxy.url, '/v2/orders/search', {
        method: 'POST',
        headers: { authorization: basicAuth('org3'), 'x-sim-delay-ms': '20' },
        body: '{}',
        signal: ac.signal,
      }).catch(() => undefined)
      setTimeout(() => ac.abort(), 5 + (i % 10) * 7)
      return p
    })
    await Promise.all(aborts)
    await until(
      async () => (await adminJson<{ keys: unknown[] }>(stack.proxy, '/status')).keys.length === 0,
      'every permit back',
      15_000,
    )
    expect(keyStats(stack.sim, 'org3', 'POST /orders/search')?.maxInProgress ?? 0).toBeLessThanOrEqual(1)
    // And the key still works.
    expect(
      (
        await send(stack.proxy.url, '/v2/orders/search', {
          method: 'POST',
          headers: { authorization: basicAuth('org3') },
          body: '{}',
        })
      ).status,
    ).toBe(200)
  })
})
