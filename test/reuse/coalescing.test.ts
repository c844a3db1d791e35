import { describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { startProxy, useSimAndProxy } from '../support/proxy.js'
import { basicAuth, startSim } from '../support/sim.js'
import { parsePromText, valueOf } from '../metrics/prom-text.js'
import { COUNTRIES, COUNTRIES_ID, followersWaiting, holdPermit, reuseStatus, simCalls } from './support.js'

// The lookup list at limit 1, so one held permit makes every later request queue (see holdPermit).
const SETTINGS = { requestLog: true, limits: { overrides: { [COUNTRIES_ID]: 1 } } }

describe('identical concurrent reads share one upstream call and one permit', () => {
  const stack = useSimAndProxy({ latencyMs: 200 }, SETTINGS)

  it('20 identical GET /properties/countries of one org: the sim sees 1 call, all 20 get the same answer with their own x-request-id', async () => {
    const held = await holdPermit(stack.proxy, stack.sim, 'org1')
    const auth = basicAuth('org1', 'app-key')
    const answers = Array.from({ length: 20 }, (_, i) =>
      send(stack.proxy.url, COUNTRIES + '?language=en', {
        headers: { authorization: auth, 'x-request-id': `client-${i}`, accept: 'application/json' },
      }),
    )
    await followersWaiting(stack.proxy, 19)
    expect((await held.answer).status).toBe(200)
    const got = await Promise.all(answers)

    expect(got.map((a) => a.status)).toEqual(Array(20).fill(200))
    expect(new Set(got.map((a) => a.text)).size).toBe(1)
    expect(got.map((a) => a.headers['x-request-id'])).toEqual(Array.from({ length: 20 }, (_, i) => `client-${i}`))
    expect(got[0]!.json<{ path: string; query: string }>()).toMatchObject({
      path: '/properties/countries',
      query: 'language=en',
    })
    expect(simCalls(stack.sim, 'org1')).toBe(2) // the blocker and the one shared call

    const outcomes = stack.proxy.logs
      .filter((l) => l.msg === 'request' && String(l.reqId).startsWith('client-'))
      .map((l) => l.outcome)
    expect(outcomes.filter((o) => o === 'coalesced')).toHaveLength(19)
    expect(outcomes.filter((o) => o === 'forwarded')).toHaveLength(1)
    const metrics = parsePromText(await (await fetch(stack.proxy.adminUrl + '/metrics')).text())
    expect(valueOf(metrics, 'sluice_permits_saved_total', { endpoint: COUNTRIES_ID, by: 'coalescing' })).toBe(19)
    expect((await reuseStatus(stack.proxy)).permitsSaved).toContainEqual({
      instance: 'org1',
      endpoint: COUNTRIES_ID,
      coalesced: 19,
      cacheHits: 0,
    })
  })

  it('two API keys of one org: 2 calls, each key gets its own answer', async () => {
    stack.sim.reset()
    const held = await holdPermit(stack.proxy, stack.sim, 'org2')
    const answers = Array.from({ length: 20 }, (_, i) =>
      send(stack.proxy.url, COUNTRIES, { headers: { authorization: basicAuth('org2', i % 2 ? 'key-a' : 'key-b') } }),
    )
    await followersWaiting(stack.proxy, 18)
    await held.answer
    const got = await Promise.all(answers)
    expect(got.map((a) => a.status)).toEqual(Array(20).fill(200))
    expect(simCalls(stack.sim, 'org2')).toBe(3) // the blocker and one call per API key
    const sentAuth = got.map((a) => a.json<{ headers: Record<string, string> }>().headers.authorization)
    got.forEach((_, i) => expect(sentAuth[i]).toBe(basicAuth('org2', i % 2 ? 'key-a' : 'key-b')))
  })

  it('a POST is never coalesced', async () => {
    stack.sim.reset()
    const body = '{"searchFields":[],"outputFields":["Account ID"]}'
    const got = await Promise.all(
      Array.from({ length: 5 }, () =>
        send(stack.proxy.url, '/v2/accounts/search', {
          method: 'POST',
          headers: { authorization: basicAuth('org3'), 'content-type': 'application/json' },
          body,
        }),
      ),
    )
    expect(got.map((a) => a.status)).toEqual(Array(5).fill(200))
    expect(simCalls(stack.sim, 'org3', 'POST /accounts/search')).toBe(5)
  })

  it('a request with Cache-Control: no-cache makes its own call', async () => {
    stack.sim.reset()
    const held = await holdPermit(stack.proxy, stack.sim, 'org4')
    const answers = Array.from({ length: 4 }, () =>
      send(stack.proxy.url, COUNTRIES, {
        headers: { authorization: basicAuth('org4', 'app-key'), 'cache-control': 'no-cache' },
      }),
    )
    await until(
      async () =>
        (
          await fetch(stack.proxy.adminUrl + '/status').then(
            (r) => r.json() as Promise<{ keys: { instance: string; queued: number }[] }>,
          )
        ).keys.some((k) => k.instance === 'org4' && k.queued === 4),
      '4 queued',
    )
    expect((await reuseStatus(stack.proxy)).coalescing.followers).toBe(0)
    await held.answer
    expect((await Promise.all(answers)).map((a) => a.status)).toEqual(Array(4).fill(200))
    expect(simCalls(stack.sim, 'org4')).toBe(5)
  })

  it('the client of the leading request leaves while queued: the others are still answered, by one call', async () => {
    stack.sim.reset()
    const held = await holdPermit(stack.proxy, stack.sim, 'org5')
    const auth = basicAuth('org5', 'app-key')
    const leaving = new AbortController()
    const leader = send(stack.proxy.url, COUNTRIES, { headers: { authorization: auth }, signal: leaving.signal }).catch(
      (err: unknown) => err,
    )
    await until(async () => (await reuseStatus(stack.proxy)).coalescing.calls === 1, 'the leading request queues')
    const others = Array.from({ length: 5 }, () =>
      send(stack.proxy.url, COUNTRIES, { headers: { authorization: auth } }),
    )
    await followersWaiting(stack.proxy, 5)
    leaving.abort()
    await leader
    await held.answer
    const got = await Promise.all(others)
    expect(got.map((a) => a.status)).toEqual(Array(5).fill(200))
    expect(simCalls(stack.sim, 'org5')).toBe(2) // the blocker and one call for the five that stayed
  })
})

describe('answers above coalesce.maxBytes are not shared', () => {
  it('each of 4 identical requests gets its whole answer from its own call', async () => {
    const sim = await startSim({ latencyMs: 200 })
    const proxy = await startProxy({ upstream: sim.apiUrl, ...SETTINGS, coalesce: { maxBytes: 64 } })
    try {
      const held = await holdPermit(proxy, sim, 'org1')
      const answers = Array.from({ length: 4 }, () =>
        send(proxy.url, COUNTRIES, { headers: { authorization: basicAuth('org1', 'app-key') } }),
      )
      await followersWaiting(proxy, 3)
      await held.answer
      const got = await Promise.all(answers)
      expect(got.map((a) => a.status)).toEqual(Array(4).fill(200))
      for (const a of got) expect(a.json<{ path: string }>().path).toBe('/properties/countries')
      expect(simCalls(sim, 'org1')).toBe(5)
    } finally {
      await proxy.close()
      await sim.close()
    }
  })
})
