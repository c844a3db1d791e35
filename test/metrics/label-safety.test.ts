import { afterEach, describe, expect, it } from 'vitest'
import { createMemoryLimiter, type MemoryLimiter } from '../../src/limiter/memory/index.js'
import { createMetrics } from '../../src/metrics/index.js'
import type { Outcome } from '../../src/record/record.js'
import { parsePromText } from './prom-text.js'
import { catalog, record, settings } from './records.js'

// What must never become a label value: resource ids from paths, API keys, Basic-auth headers.
const ACCOUNT_ID = '884213'
const CONTACT_ID = '5561907'
const API_KEY = 'k3y-9f8e7d6c5b4a'
const BASIC = 'Basic ' + Buffer.from(`org1:${API_KEY}`).toString('base64')
const FORBIDDEN = [ACCOUNT_ID, CONTACT_ID, API_KEY, BASIC, Buffer.from(`org1:${API_KEY}`).toString('base64')]

let limiter: MemoryLimiter | undefined
afterEach(async () => {
  await limiter?.close()
  limiter = undefined
})

describe('label values', () => {
  it('never carry a path id, an API key or an auth header, whatever the records say', async () => {
    // the limiter is built with the metrics' observer, so the metrics read it through a thunk
    const metrics = createMetrics(settings(), { limiter: () => limiter, catalog })
    const built = createMemoryLimiter({ observer: metrics.observer })
    limiter = built

    // Templates of paths the catalog does not know keep whatever static segments a client sent.
    const unknownEndpoints = [
      `GET /accounts/${ACCOUNT_ID}/secretStuff`,
      `POST /widgets/${API_KEY}`,
      `GET /x/${CONTACT_ID}`,
      `GET /accounts/{id}/contacts/${CONTACT_ID}`,
    ]
    const outcomes: Outcome[] = [
      'forwarded',
      'queue_full',
      'queue_timeout',
      'client_aborted',
      'upstream_error',
      'bad_request',
    ]
    const instances = ['org1', `org1:${API_KEY}`, BASIC, `<script>${ACCOUNT_ID}</script>`, 'x'.repeat(65) + ACCOUNT_ID]
    for (const endpoint of [...unknownEndpoints, 'GET /accounts/{id}/contacts', 'unmatched']) {
      for (const instance of instances) {
        for (const outcome of outcomes) {
          for (const [method, status] of [
            [`BREW${ACCOUNT_ID}`, 12345],
            ['PROPFIND', -1],
          ] as const) {
            metrics.requestFinished(
              record({ endpoint, instance, outcome, method, status, retries: 1, queueSeconds: 0.5 }),
            )
          }
        }
        metrics.upstream429(endpoint, instance)
        metrics.observer.leaseLost?.({ instance, endpoint })
        // and live limiter keys, which the per-key gauges read at scrape time
        await built.acquire({ instance, endpoint }, { limit: 1, deadline: Date.now() + 60_000, maxQueue: 10 })
      }
    }
    metrics.observer.redisCommand?.(`EVALSHA ${API_KEY}`, 0.001, false)

    const samples = parsePromText((await metrics.scrape()).body)
    const values = new Set(samples.flatMap((s) => Object.values(s.labels)))
    for (const value of values) {
      for (const secret of FORBIDDEN) expect(value, `label value ${JSON.stringify(value)}`).not.toContain(secret)
    }

    // every series is there once: values that map to the same label never make two series
    const ids = samples.map((x) => x.name + JSON.stringify(x.labels))
    expect(ids.length).toBe(new Set(ids).size)

    // and the policy is the documented one, not just an absence
    const endpoints = new Set(samples.map((s) => s.labels.endpoint).filter((e) => e !== undefined))
    expect([...endpoints].sort()).toEqual(['GET /accounts/{id}/contacts', 'unknown', 'unmatched'])
    const orgs = new Set(samples.map((s) => s.labels.org).filter((o) => o !== undefined))
    expect([...orgs].sort()).toEqual(['_invalid', 'org1'])
    // `other` and `0` from the records; GET and 503 from the queue_full / queue_timeout series a catalog
    // endpoint gets at 0 for each organisation that uses it (its method comes from the endpoint id)
    expect(new Set(samples.map((s) => s.labels.method).filter((m) => m !== undefined))).toEqual(
      new Set(['other', 'GET']),
    )
    expect(new Set(samples.map((s) => s.labels.code).filter((c) => c !== undefined))).toEqual(new Set(['0', '503']))
    for (const s of samples.filter((x) => x.labels.method === 'GET'))
      expect(s).toMatchObject({ value: 0, labels: { code: '503' } })
    expect(new Set(samples.map((s) => s.labels.operation).filter((o) => o !== undefined))).toEqual(new Set(['other']))
  })
})
