import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats, waitForSim, withSim, type Sim } from '../support/sim.js'

/** Starts a request that the sim never answers; returns a function that hangs it up. */
function hang(sim: Sim, method: string, path: string, org: string): () => void {
  const controller = new AbortController()
  request(`${sim.apiUrl}${path}`, {
    method: method as 'GET',
    headers: { authorization: basicAuth(org), 'x-sim-hang': '1' },
    signal: controller.signal,
  }).catch(() => undefined) // aborted on purpose
  return () => controller.abort()
}

async function call(sim: Sim, method: string, path: string, org: string): Promise<{ status: number; body: unknown }> {
  const res = await request(`${sim.apiUrl}${path}`, {
    method: method as 'GET',
    headers: { authorization: basicAuth(org) },
  })
  return { status: res.statusCode, body: await res.body.json() }
}

describe('the sim enforces §8 per (instance, endpoint)', () => {
  it('POST /accounts/search: limit 1 per instance, 429 in the API error shape, instances independent', async () => {
    const sim = await withSim()
    const release = hang(sim, 'POST', '/accounts/search', 'acme')
    await waitForSim(
      sim,
      (s) => keyStats(s, 'acme', 'POST /accounts/search')?.inProgress === 1,
      'acme search in progress',
    )

    const second = await call(sim, 'POST', '/accounts/search', 'acme')
    expect(second).toEqual({
      status: 429,
      body: [{ code: '429', message: 'Too many requests: 1 in progress for POST /accounts/search of instance acme' }],
    })
    // another instance, and another endpoint of the same instance, are not blocked
    expect((await call(sim, 'POST', '/accounts/search', 'beta')).status).toBe(200)
    expect((await call(sim, 'POST', '/donations/search', 'acme')).status).toBe(200)

    release()
    await waitForSim(sim, (s) => keyStats(s, 'acme', 'POST /accounts/search')?.inProgress === 0, 'acme search released')
    expect((await call(sim, 'POST', '/accounts/search', 'acme')).status).toBe(200)

    expect(keyStats(sim, 'acme', 'POST /accounts/search')).toMatchObject({
      limit: 1,
      maxInProgress: 1,
      maxAttempted: 2,
      requests: 3,
      rejected429: 1,
      pushback429: 0,
    })
    expect(keyStats(sim, 'beta', 'POST /accounts/search')).toMatchObject({
      limit: 1,
      maxInProgress: 1,
      maxAttempted: 1,
      requests: 1,
      rejected429: 0,
    })
  })

  it('a burst never gets more than the limit in progress', async () => {
    const sim = await withSim({ latencyMs: 20 })
    const statuses = await Promise.all(
      Array.from({ length: 20 }, () => call(sim, 'POST', '/orders/search', 'acme').then((r) => r.status)),
    )
    const stats = keyStats(sim, 'acme', 'POST /orders/search')!
    expect(stats.maxInProgress).toBe(1)
    expect(statuses.filter((s) => s === 200).length + statuses.filter((s) => s === 429).length).toBe(20)
    expect(statuses.filter((s) => s === 429)).toHaveLength(stats.rejected429)
    expect(stats.requests).toBe(20)
  })

  it('limit 5 for the other listed endpoints; variants of a path count as one endpoint', async () => {
    const sim = await withSim()
    const paths = [
      '/accounts/1/contacts',
      '/accounts/2/contacts/',
      '/Accounts/3/CONTACTS',
      '//accounts/4/contacts',
      '/accounts/%35/contacts',
    ]
    const releases = paths.map((p) => hang(sim, 'GET', p, 'acme'))
    await waitForSim(
      sim,
      (s) => keyStats(s, 'acme', 'GET /accounts/{id}/contacts')?.inProgress === 5,
      'five contacts lists in progress',
    )
    expect((await call(sim, 'GET', '/accounts/6/contacts', 'acme')).status).toBe(429)
    expect(keyStats(sim, 'acme', 'GET /accounts/{id}/contacts')).toMatchObject({
      limit: 5,
      maxInProgress: 5,
      rejected429: 1,
    })
    for (const release of releases) release()
  })

  it('unlisted and unknown endpoints are unlimited by default', async () => {
    const sim = await withSim()
    const releases = Array.from({ length: 8 }, (_, i) => hang(sim, 'GET', `/groups/${i}`, 'acme'))
    await waitForSim(
      sim,
      (s) => keyStats(s, 'acme', 'GET /groups/{id}')?.inProgress === 8,
      'eight group reads in progress',
    )
    expect(keyStats(sim, 'acme', 'GET /groups/{id}')).toMatchObject({ limit: null, rejected429: 0 })
    expect((await call(sim, 'GET', '/not/in/catalog', 'acme')).status).toBe(200)
    for (const release of releases) release()
  })

  it('unlistedLimit applies to "–" and unknown endpoints; overrides to named ones', async () => {
    const sim = await withSim({ unlistedLimit: 1, overrides: { 'POST /accounts/search': 2 } })
    const r1 = hang(sim, 'GET', '/groups/list', 'acme')
    const r2 = hang(sim, 'GET', '/widgets/7', 'acme')
    const r3 = hang(sim, 'POST', '/accounts/search', 'acme')
    const r4 = hang(sim, 'POST', '/accounts/search', 'acme')
    await waitForSim(
      sim,
      (s) =>
        keyStats(s, 'acme', 'GET /groups/list')?.inProgress === 1 &&
        keyStats(s, 'acme', 'GET /widgets/{id}')?.inProgress === 1 &&
        keyStats(s, 'acme', 'POST /accounts/search')?.inProgress === 2,
      'four in progress',
    )
    expect((await call(sim, 'GET', '/groups/list', 'acme')).status).toBe(429)
    expect((await call(sim, 'GET', '/widgets/8', 'acme')).status).toBe(429)
    expect((await call(sim, 'POST', '/accounts/search', 'acme')).status).toBe(429)
    expect(keyStats(sim, 'acme', 'POST /accounts/search')).toMatchObject({ limit: 2, maxInProgress: 2 })
    for (const release of [r1, r2, r3, r4]) release()
  })

  it('the instance is the Basic-auth username, else "default"', async () => {
    const sim = await withSim()
    const res = await request(`${sim.apiUrl}/webhooks`)
    expect(await res.body.json()).toMatchObject({ instance: 'default', endpoint: 'GET /webhooks' })
    expect((await call(sim, 'GET', '/webhooks', 'org-42')).body).toMatchObject({ instance: 'org-42' })
  })
})
