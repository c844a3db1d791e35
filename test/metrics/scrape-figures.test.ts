import { afterEach, describe, expect, it } from 'vitest'
import { createMemoryLimiter, type MemoryLimiter } from '../../src/limiter/memory/index.js'
import type { Permit } from '../../src/limiter/types.js'
import { createMetrics, type SluiceMetrics } from '../../src/metrics/index.js'
import { parsePromText, select, valueOf, type Sample } from './prom-text.js'
import { catalog, record, settings } from './records.js'

const SEARCH = 'POST /accounts/search'
const CONTACTS = 'GET /accounts/{id}/contacts'

let limiter: MemoryLimiter | undefined
afterEach(async () => {
  await limiter?.close()
  limiter = undefined
})

function setup(): SluiceMetrics {
  // the limiter is built with the metrics' observer, so the metrics read it through a thunk
  const metrics = createMetrics(settings(), { limiter: () => limiter, catalog })
  limiter = createMemoryLimiter({ observer: metrics.observer })
  return metrics
}

async function scrape(metrics: SluiceMetrics): Promise<Sample[]> {
  const { contentType, body } = await metrics.scrape()
  expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/)
  return parsePromText(body)
}

describe('the scrape after known calls', () => {
  it('counts requests by endpoint, method, code, outcome and org', async () => {
    const metrics = setup()
    for (let i = 0; i < 3; i++) metrics.requestFinished(record({ endpoint: SEARCH, method: 'POST', status: 200 }))
    metrics.requestFinished(record({ endpoint: SEARCH, method: 'POST', status: 222 }))
    metrics.requestFinished(
      record({ endpoint: SEARCH, method: 'POST', status: 503, outcome: 'queue_timeout', upstreamSeconds: 0 }),
    )
    metrics.requestFinished(
      record({ endpoint: CONTACTS, instance: 'org2', status: 0, outcome: 'client_aborted', upstreamSeconds: 0 }),
    )

    const s = await scrape(metrics)
    const req = (labels: Record<string, string>) => valueOf(s, 'sluice_requests_total', labels)
    expect(req({ endpoint: SEARCH, method: 'POST', code: '200', outcome: 'forwarded', org: 'org1' })).toBe(3)
    expect(req({ endpoint: SEARCH, code: '222', outcome: 'forwarded' })).toBe(1)
    expect(req({ endpoint: SEARCH, code: '503', outcome: 'queue_timeout' })).toBe(1)
    expect(req({ endpoint: CONTACTS, method: 'GET', code: '0', outcome: 'client_aborted', org: 'org2' })).toBe(1)
    // and the 503 outcomes the alerts watch, at 0, for each (endpoint, org) seen: search's queue_full, contacts' two
    expect(req({ endpoint: SEARCH, code: '503', outcome: 'queue_full', org: 'org1' })).toBe(0)
    expect(req({ endpoint: CONTACTS, method: 'GET', code: '503', outcome: 'queue_full', org: 'org2' })).toBe(0)
    expect(req({ endpoint: CONTACTS, method: 'GET', code: '503', outcome: 'queue_timeout', org: 'org2' })).toBe(0)
    expect(select(s, 'sluice_requests_total')).toHaveLength(7)
  })

  it('puts durations into the right histogram buckets', async () => {
    const metrics = setup()
    // Two requests waited 2.5 s and 40 s for a permit; the upstream took 0.3 s and 0.08 s (one attempt each).
    metrics.upstreamAttempt(SEARCH, 0.3)
    metrics.requestFinished(
      record({ endpoint: SEARCH, method: 'POST', queueSeconds: 2.5, upstreamSeconds: 0.3, totalSeconds: 2.8 }),
    )
    metrics.upstreamAttempt(SEARCH, 0.08)
    metrics.requestFinished(
      record({ endpoint: SEARCH, method: 'POST', queueSeconds: 40, upstreamSeconds: 0.08, totalSeconds: 40.08 }),
    )
    // Rejected before queueing: counted, but no queue wait nor upstream time.
    metrics.requestFinished(
      record({ endpoint: 'unmatched', status: 400, outcome: 'bad_request', upstreamSeconds: 0, totalSeconds: 0.001 }),
    )

    const s = await scrape(metrics)
    const wait = (le: string) => valueOf(s, 'sluice_queue_wait_seconds_bucket', { endpoint: SEARCH, le })
    expect(wait('2')).toBe(0)
    expect(wait('5')).toBe(1)
    expect(wait('30')).toBe(1)
    expect(wait('45')).toBe(2)
    expect(wait('+Inf')).toBe(2)
    expect(valueOf(s, 'sluice_queue_wait_seconds_count', { endpoint: SEARCH })).toBe(2)
    expect(valueOf(s, 'sluice_queue_wait_seconds_sum', { endpoint: SEARCH })).toBeCloseTo(42.5, 9)
    expect(select(s, 'sluice_queue_wait_seconds_count', { endpoint: 'unmatched' })).toHaveLength(0)

    const up = (le: string) => valueOf(s, 'sluice_upstream_duration_seconds_bucket', { endpoint: SEARCH, le })
    expect(up('0.075')).toBe(0)
    expect(up('0.1')).toBe(1)
    expect(up('0.25')).toBe(1)
    expect(up('0.4')).toBe(2)
    expect(valueOf(s, 'sluice_upstream_duration_seconds_sum', { endpoint: SEARCH })).toBeCloseTo(0.38, 9)
    expect(select(s, 'sluice_upstream_duration_seconds_count', { endpoint: 'unmatched' })).toHaveLength(0)

    expect(valueOf(s, 'sluice_request_duration_seconds_count', { endpoint: SEARCH })).toBe(2)
    expect(valueOf(s, 'sluice_request_duration_seconds_count', { endpoint: 'unmatched' })).toBe(1)
    expect(valueOf(s, 'sluice_request_duration_seconds_bucket', { endpoint: SEARCH, le: '2.5' })).toBe(0)
    expect(valueOf(s, 'sluice_request_duration_seconds_bucket', { endpoint: SEARCH, le: '5' })).toBe(1)
  })

  it('counts upstream 429s as they come and retries when the request finishes', async () => {
    const metrics = setup()
    metrics.upstream429(SEARCH, 'org1')
    metrics.upstream429(SEARCH, 'org1')
    metrics.upstream429(CONTACTS, 'org2')
    metrics.requestFinished(record({ endpoint: SEARCH, method: 'POST', retries: 2, upstream429s: 2 }))
    const s = await scrape(metrics)
    expect(valueOf(s, 'sluice_upstream_429_total', { endpoint: SEARCH, org: 'org1' })).toBe(2)
    expect(valueOf(s, 'sluice_upstream_429_total', { endpoint: CONTACTS, org: 'org2' })).toBe(1)
    expect(valueOf(s, 'sluice_upstream_retries_total', { endpoint: SEARCH, org: 'org1' })).toBe(2)
  })

  it('reports the limiter mode, Redis commands and lost leases from the observer', async () => {
    const metrics = setup()
    let s = await scrape(metrics)
    const mode = (m: string) => valueOf(s, 'sluice_limiter_mode', { mode: m })
    expect([mode('memory'), mode('redis'), mode('local'), mode('open'), mode('closed')]).toEqual([1, 0, 0, 0, 0])
    expect(valueOf(s, 'sluice_limiter_ready')).toBe(1)

    metrics.observer.redisCommand?.('acquire', 0.0004, true)
    metrics.observer.redisCommand?.('acquire', 0.002, false)
    metrics.observer.redisCommand?.('release', 0.0003, true)
    metrics.observer.leaseLost?.({ instance: 'org1', endpoint: SEARCH })
    metrics.observer.modeChanged?.('local')
    s = await scrape(metrics)
    expect(valueOf(s, 'sluice_redis_command_duration_seconds_count', { operation: 'acquire' })).toBe(2)
    expect(valueOf(s, 'sluice_redis_command_duration_seconds_bucket', { operation: 'acquire', le: '0.0005' })).toBe(1)
    expect(valueOf(s, 'sluice_redis_command_duration_seconds_count', { operation: 'release' })).toBe(1)
    expect(valueOf(s, 'sluice_redis_errors_total', { operation: 'acquire' })).toBe(1)
    expect(select(s, 'sluice_redis_errors_total', { operation: 'release' })).toHaveLength(0)
    expect(valueOf(s, 'sluice_lease_lost_total', { endpoint: SEARCH, org: 'org1' })).toBe(1)
    // memory at construction, then local
    expect(valueOf(s, 'sluice_limiter_mode_changes_total', { mode: 'memory' })).toBe(1)
    expect(valueOf(s, 'sluice_limiter_mode_changes_total', { mode: 'local' })).toBe(1)
  })

  it('reads queue depth, in flight, limit and oldest wait per key from the limiter at scrape time', async () => {
    const metrics = setup()
    const l = limiter!
    const opts = (limit: number) => ({ limit, deadline: Date.now() + 60_000, maxQueue: 100 })
    const held: Permit[] = [await l.acquire({ instance: 'org1', endpoint: SEARCH }, opts(1))]
    const waiting = [
      l.acquire({ instance: 'org1', endpoint: SEARCH }, opts(1)),
      l.acquire({ instance: 'org1', endpoint: SEARCH }, opts(1)),
    ]
    for (const w of waiting) w.catch(() => {}) // a failed assertion closes the limiter under them
    for (let i = 0; i < 3; i++) held.push(await l.acquire({ instance: 'org2', endpoint: CONTACTS }, opts(5)))
    await new Promise((r) => setTimeout(r, 20))

    let s = await scrape(metrics)
    const k1 = { endpoint: SEARCH, org: 'org1' }
    const k2 = { endpoint: CONTACTS, org: 'org2' }
    expect(valueOf(s, 'sluice_queue_depth', k1)).toBe(2)
    expect(valueOf(s, 'sluice_permits_in_flight', k1)).toBe(1)
    expect(valueOf(s, 'sluice_permit_limit', k1)).toBe(1)
    expect(valueOf(s, 'sluice_queue_oldest_wait_seconds', k1)).toBeGreaterThanOrEqual(0.015)
    expect(valueOf(s, 'sluice_queue_depth', k2)).toBe(0)
    expect(valueOf(s, 'sluice_permits_in_flight', k2)).toBe(3)
    expect(valueOf(s, 'sluice_permit_limit', k2)).toBe(5)
    expect(valueOf(s, 'sluice_queue_oldest_wait_seconds', k2)).toBe(0)
    expect(valueOf(s, 'sluice_active_keys')).toBe(2)

    // Everything given back: the limiter drops idle keys, and so do the gauges.
    for (const p of held) p.release()
    for (const w of waiting) (await w).release()
    s = await scrape(metrics)
    expect(select(s, 'sluice_queue_depth')).toHaveLength(0)
    expect(select(s, 'sluice_permits_in_flight')).toHaveLength(0)
    expect(valueOf(s, 'sluice_active_keys')).toBe(0)
  })

  it('exports the default process and Node metrics when asked', async () => {
    const metrics = createMetrics(settings({ defaultMetrics: true }), { limiter: () => undefined, catalog })
    const s = await scrape(metrics)
    expect(select(s, 'process_cpu_user_seconds_total').length).toBe(1)
    expect(select(s, 'nodejs_eventloop_lag_seconds').length).toBe(1)
    // no limiter yet: no mode is active, no keys
    expect(select(s, 'sluice_limiter_mode').every((x) => x.value === 0)).toBe(true)
    expect(valueOf(s, 'sluice_active_keys')).toBe(0)
  })

  it('counts nothing when metrics are disabled', async () => {
    const metrics = createMetrics(settings({ enabled: false }), { limiter: () => undefined, catalog })
    metrics.requestFinished(record())
    metrics.upstream429(SEARCH, 'org1')
    const s = await scrape(metrics)
    expect(s.filter((x) => x.name.startsWith('sluice_'))).toEqual([])
  })
})
