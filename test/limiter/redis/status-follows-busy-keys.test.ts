import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Pool } from 'undici'
import type { Redis } from 'ioredis'
import { send, until } from '../../support/http.js'
import { adminJson, startProxy, type RunningProxy } from '../../support/proxy.js'
import { startRedis, uniquePrefix, type TestRedis } from '../../support/redis.js'
import { basicAuth, startSim, type Sim } from '../../support/sim.js'
import { parsePromText, valueOf } from '../../metrics/prom-text.js'

/**
 * What an idle key costs at scrape time on Redis (docs/redis-limiter.md, "Status and metrics"): after
 * thousands of keys were used once, a `/metrics` scrape and a `/status` read run scripts for the keys
 * busy now (announced by the replicas' heartbeats), not for every key used within the last lease; the
 * busy keys still show with their global counts, one busy only on the other replica included, and the
 * learned limits listed are bounded the same way. Two real
 * proxies on a redis-server of the test's own, in front of the sim.
 */
const TOUCHED = 3_000
const CONCURRENCY = 16
const ENDPOINTS = ['contacts', 'donations', 'pledges']
/** a lease long enough that every key touched would still be "used within the last lease" at the scrape */
const LEASE_MS = 30_000

interface StatusKey {
  instance: string
  endpoint: string
  inFlight: number
  queued: number
}

/** EVALSHA and EVAL calls Redis has run so far (INFO commandstats). */
async function scriptCalls(client: Redis): Promise<number> {
  const stats = await client.info('commandstats')
  let n = 0
  for (const m of stats.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) n += Number(m[2])
  return n
}

describe('a scrape and /status on Redis follow the busy keys, not every key used lately', () => {
  let redis: TestRedis
  let client: Redis
  let sim: Sim
  let a: RunningProxy
  let b: RunningProxy
  const held: Promise<unknown>[] = []

  beforeAll(async () => {
    redis = await startRedis()
    client = redis.client()
    sim = await startSim()
    const settings = {
      upstream: sim.apiUrl,
      requestLog: false,
      redis: { url: redis.url, keyPrefix: uniquePrefix('busy'), leaseMs: LEASE_MS },
      shutdown: { graceMs: 200 },
    }
    a = await startProxy(settings)
    b = await startProxy(settings)
  }, 60_000)

  afterAll(async () => {
    sim?.open('busy')
    await Promise.allSettled(held)
    await a?.close()
    await b?.close()
    await sim?.close()
    await redis?.close()
  })

  it(`after ${TOUCHED.toLocaleString('en-US')} keys used once, a scrape and /status run scripts only for the busy keys, and show them with their global counts`, async () => {
    // the busy organisations first, so they get series of their own (metrics.maxInstances: the first 100)
    for (const org of ['busy1', 'busy2'])
      expect(
        (await send(a.url, '/v2/accounts/9/contacts', { headers: { authorization: basicAuth(org) } })).status,
      ).toBe(200)
    // every key once, through replica a
    const pool = new Pool(a.url, { connections: CONCURRENCY })
    const orgs = TOUCHED / ENDPOINTS.length
    let next = 0
    const statuses: number[] = []
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = next++; i < TOUCHED; i = next++) {
          const res = await pool.request({
            path: `/v2/accounts/${i}/${ENDPOINTS[Math.floor(i / orgs)]}`,
            method: 'GET',
            headers: { authorization: basicAuth(`org${i % orgs}`) },
          })
          await res.body.dump()
          statuses.push(res.statusCode)
        }
      }),
    )
    await pool.close()
    expect(statuses.filter((s) => s !== 200)).toEqual([])

    // busy now: 3 permits of one key (2 through b, 1 through a), 1 of another key only through b
    // (distinct accounts: identical reads in flight would share one call)
    const hold = (proxy: RunningProxy, org: string, account: number): void =>
      void held.push(
        send(proxy.url, `/v2/accounts/${account}/contacts`, {
          headers: { authorization: basicAuth(org), 'x-sim-hold': 'busy' },
        }),
      )
    hold(b, 'busy1', 1)
    hold(b, 'busy1', 2)
    hold(a, 'busy1', 3)
    hold(b, 'busy2', 4)
    const CONTACTS = 'GET /accounts/{id}/contacts'
    const expected = [
      { instance: 'busy1', endpoint: CONTACTS, inFlight: 3, queued: 0 },
      { instance: 'busy2', endpoint: CONTACTS, inFlight: 1, queued: 0 },
    ]
    const busyRows = (keys: StatusKey[]): StatusKey[] =>
      keys.map(({ instance, endpoint, inFlight, queued }) => ({ instance, endpoint, inFlight, queued }))
    // busy2 is busy only on b: a hears of it through b's next heartbeat (a third of the lease)
    await until(
      async () =>
        JSON.stringify(busyRows((await adminJson<{ keys: StatusKey[] }>(a, '/status')).keys)) ===
        JSON.stringify(expected),
      'a lists both busy keys',
      60_000,
    )

    // the scrape: one script per busy key (and the registry's), not one per key used within the lease
    const beforeScrape = await scriptCalls(client)
    const samples = parsePromText(await (await fetch(`${a.adminUrl}/metrics`)).text())
    const scrapeScripts = (await scriptCalls(client)) - beforeScrape
    expect(scrapeScripts).toBeLessThan(TOUCHED / 10)
    expect(valueOf(samples, 'sluice_permits_in_flight', { endpoint: CONTACTS, org: 'busy1' })).toBe(3)
    expect(valueOf(samples, 'sluice_permits_in_flight', { endpoint: CONTACTS, org: 'busy2' })).toBe(1)
    expect(valueOf(samples, 'sluice_active_keys')).toBe(2)

    // /status, on either replica, likewise
    for (const proxy of [a, b]) {
      const beforeStatus = await scriptCalls(client)
      const status = await adminJson<{ keys: StatusKey[]; learned: unknown[] }>(proxy, '/status')
      expect((await scriptCalls(client)) - beforeStatus).toBeLessThan(TOUCHED / 10)
      expect(busyRows(status.keys)).toEqual(expected)
      // the learned limits listed are those of the same keys (every key here learns: lowerPublished), not of every key used
      expect(status.learned.length).toBeLessThan(TOUCHED / 10)
    }
  }, 120_000)
})
