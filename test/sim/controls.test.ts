import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats, waitForSim, withSim } from '../support/sim.js'

describe('test-control headers', () => {
  it('x-sim-status answers with that status (222 included) and still echoes', async () => {
    const sim = await withSim()
    const res = await request(`${sim.apiUrl}/accounts`, {
      method: 'POST',
      headers: { 'x-sim-status': '222' },
      body: '{}',
    })
    expect(res.statusCode).toBe(222)
    expect(await res.body.json()).toMatchObject({ method: 'POST', endpoint: 'POST /accounts' })
    const err = await request(`${sim.apiUrl}/accounts`, { method: 'POST', headers: { 'x-sim-status': '503' } })
    expect(err.statusCode).toBe(503)
    await err.body.dump()
  })

  it('x-sim-delay-ms keeps the request in progress until it has run out', async () => {
    const sim = await withSim()
    const pending = request(`${sim.apiUrl}/accounts/search`, { method: 'POST', headers: { 'x-sim-delay-ms': '300' } })
    await waitForSim(sim, (s) => keyStats(s, 'default', 'POST /accounts/search')?.inProgress === 1, 'in progress')
    const res = await pending
    expect(res.statusCode).toBe(200)
    await res.body.dump()
    const stats = keyStats(sim, 'default', 'POST /accounts/search')!
    expect(stats.inProgress).toBe(0)
    // a lower bound only: the timer never fires before its delay (minus clock rounding)
    expect(stats.busyMs).toBeGreaterThanOrEqual(295)
  })

  it('a request whose client hung up stays in progress until its work is done', async () => {
    const sim = await withSim()
    const controller = new AbortController()
    const first = request(`${sim.apiUrl}/accounts/search`, {
      method: 'POST',
      headers: { 'x-sim-delay-ms': '20000', authorization: basicAuth('acme') },
      signal: controller.signal,
    }).catch((err: unknown) => err)
    await waitForSim(sim, (s) => keyStats(s, 'acme', 'POST /accounts/search')?.inProgress === 1, 'in progress')
    controller.abort()
    await first
    // the upstream is still working on it: the next one is over the limit
    const second = await request(`${sim.apiUrl}/accounts/search`, {
      method: 'POST',
      headers: { authorization: basicAuth('acme') },
    })
    expect(second.statusCode).toBe(429)
    await second.body.dump()
  })

  it('x-sim-hang never answers; the request leaves when the client closes the connection', async () => {
    const sim = await withSim()
    const controller = new AbortController()
    const outcome = request(`${sim.apiUrl}/webhooks`, {
      headers: { 'x-sim-hang': '1' },
      signal: controller.signal,
    }).then(
      () => 'answered',
      () => 'aborted',
    )
    await waitForSim(sim, (s) => keyStats(s, 'default', 'GET /webhooks')?.inProgress === 1, 'hung request in progress')
    controller.abort()
    expect(await outcome).toBe('aborted')
    await waitForSim(sim, (s) => keyStats(s, 'default', 'GET /webhooks')?.inProgress === 0, 'hung request gone')
  })

  it('x-sim-hold keeps requests in progress until their gate opens; later ones then pass at once', async () => {
    const sim = await withSim()
    const held = [1, 2].map(() =>
      request(`${sim.apiUrl}/webhooks`, { headers: { 'x-sim-hold': 'g1' } }).then((r) => r.statusCode),
    )
    const other = request(`${sim.apiUrl}/campaigns`, { headers: { 'x-sim-hold': 'g2' } }).then((r) => r.statusCode)
    await waitForSim(
      sim,
      (s) =>
        keyStats(s, 'default', 'GET /webhooks')?.inProgress === 2 &&
        keyStats(s, 'default', 'GET /campaigns')?.inProgress === 1,
      'held',
    )
    const opened = await request(`${sim.url}/__sim/open?gate=g1`, { method: 'POST' })
    expect(opened.statusCode).toBe(204)
    expect(await Promise.all(held)).toEqual([200, 200])
    // the open gate lets later requests through; the other gate still holds its own
    const later = await request(`${sim.apiUrl}/webhooks`, { headers: { 'x-sim-hold': 'g1' } })
    expect(later.statusCode).toBe(200)
    await later.body.dump()
    expect(keyStats(sim, 'default', 'GET /campaigns')?.inProgress).toBe(1)
    sim.open('g2')
    expect(await other).toBe(200)
  })

  it('x-sim-destroy drops the connection without an answer', async () => {
    const sim = await withSim()
    const error = await request(`${sim.apiUrl}/webhooks`, { headers: { 'x-sim-destroy': '1' } }).then(
      () => undefined,
      (err: unknown) => err,
    )
    expect(error).toBeInstanceOf(Error)
    expect((error as { code?: string }).code).toBe('UND_ERR_SOCKET')
    expect(keyStats(sim, 'default', 'GET /webhooks')).toMatchObject({ inProgress: 0, requests: 1 })
  })

  it('x-sim-retry-after adds Retry-After to a 429', async () => {
    const sim = await withSim({ rejectRatio: 1 })
    const res = await request(`${sim.apiUrl}/webhooks`, { headers: { 'x-sim-retry-after': '3' } })
    expect(res.statusCode).toBe(429)
    expect(res.headers['retry-after']).toBe('3')
    await res.body.dump()
    const plain = await request(`${sim.apiUrl}/webhooks`)
    expect(plain.statusCode).toBe(429)
    expect(plain.headers['retry-after']).toBeUndefined()
    await plain.body.dump()
  })

  it.each([
    ['x-sim-status', '99', 'x-sim-status must be a status 200-599'],
    ['x-sim-status', 'abc', 'x-sim-status must be a status 200-599'],
    ['x-sim-delay-ms', '-1', 'x-sim-delay-ms must be a whole number of ms'],
    ['x-sim-retry-after', 'soon', 'x-sim-retry-after must be whole seconds'],
  ])('a bad %s (%j) is a 400 and is not counted against the endpoint', async (name, value, message) => {
    const sim = await withSim()
    const res = await request(`${sim.apiUrl}/webhooks`, { headers: { [name]: value } })
    expect(res.statusCode).toBe(400)
    expect(await res.body.json()).toEqual([{ code: '400', message }])
    expect(sim.stats().keys).toEqual({})
    expect(sim.stats().badRequests).toBe(1)
  })
})
