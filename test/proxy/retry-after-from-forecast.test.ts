import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats } from '../support/sim.js'
import { statusOf, useSimAndProxy } from '../support/proxy.js'
import { send, until } from '../support/http.js'

// docs/requests.md "Retry-After": a 503 for a full queue tells the client when the queue ahead is
// forecast to have cleared, not a fixed second that brings every refused client back at once.

const SEARCH = 'POST /accounts/search' // limit 1
const search = (org: string, delayMs: number) => ({
  method: 'POST',
  headers: { authorization: basicAuth(org), 'x-sim-delay-ms': String(delayMs) },
  body: '{}',
})

describe('Retry-After of a 503 comes from the queue forecast', () => {
  const stack = useSimAndProxy({}, { queue: { maxLength: 1 } })

  it('a full queue behind 1.5 s permits answers Retry-After of at least 2 s', async () => {
    // five permits given back (failFast.minSamples), each held at least 1.5 s by the API
    for (let i = 0; i < 5; i++)
      expect((await send(stack.proxy.url, '/v2/accounts/search', search('org1', 1500))).status).toBe(200)
    const held = send(stack.proxy.url, '/v2/accounts/search', search('org1', 1500))
    await until(() => keyStats(stack.sim, 'org1', SEARCH)?.inProgress === 1, 'one request upstream')
    const waiting = send(stack.proxy.url, '/v2/accounts/search', search('org1', 1500))
    await until(async () => (await statusOf(stack.proxy, 'org1', SEARCH))?.queued === 1, 'one waiting')
    const full = await send(stack.proxy.url, '/v2/accounts/search', search('org1', 1500))
    expect(full.status).toBe(503)
    expect(full.json<[{ code: string }]>()[0].code).toBe('SLUICE_QUEUE_FULL')
    // one whole round (the waiter's) of at least 1.5 s lies ahead
    const seconds = Number(full.headers['retry-after'])
    expect(seconds).toBeGreaterThanOrEqual(2)
    expect(seconds).toBeLessThanOrEqual(120)
    expect((await Promise.all([held, waiting])).map((a) => a.status)).toEqual([200, 200])
  }, 30_000)
})
