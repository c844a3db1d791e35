import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/metrics/index.js'
import { parsePromText, select, valueOf } from './prom-text.js'
import { catalog, record, settings } from './records.js'

const EP = 'GET /donations/{id}'

describe('the org label', () => {
  it('is absent when metrics.instanceLabel is off: every organisation in one series', async () => {
    const metrics = createMetrics(settings({ instanceLabel: false }), { limiter: () => undefined, catalog })
    for (const instance of ['a', 'b', 'c']) {
      metrics.requestFinished(record({ endpoint: EP, instance, queueSeconds: 1 }))
      metrics.upstream429(EP, instance)
    }
    const s = parsePromText((await metrics.scrape()).body)
    expect(s.some((x) => 'org' in x.labels)).toBe(false)
    expect(valueOf(s, 'sluice_requests_total', { endpoint: EP, outcome: 'forwarded' })).toBe(3)
    expect(valueOf(s, 'sluice_upstream_429_total', { endpoint: EP })).toBe(3)
    expect(valueOf(s, 'sluice_queue_wait_seconds_count', { endpoint: EP })).toBe(3)
  })

  it('is on the queue-wait histogram only when metrics.queueWaitByOrg asks for it', async () => {
    for (const queueWaitByOrg of [false, true]) {
      const metrics = createMetrics(settings({ queueWaitByOrg }), { limiter: () => undefined, catalog })
      metrics.requestFinished(record({ endpoint: EP, instance: 'a', queueSeconds: 3 }))
      metrics.requestFinished(record({ endpoint: EP, instance: 'b', queueSeconds: 30 }))
      const s = parsePromText((await metrics.scrape()).body)
      const counts = select(s, 'sluice_queue_wait_seconds_count')
      if (queueWaitByOrg) {
        expect(counts.map((c) => [c.labels.org, c.value]).sort()).toEqual([
          ['a', 1],
          ['b', 1],
        ])
      } else {
        expect(counts.map((c) => [c.labels, c.value])).toEqual([[{ endpoint: EP }, 2]])
      }
      // the counters keep the org either way
      expect(valueOf(s, 'sluice_requests_total', { org: 'b', outcome: 'forwarded' })).toBe(1)
    }
  })

  it('gives the first maxInstances organisations their own series, then the busiest ones, and the rest `_other`', async () => {
    let now = 1_000_000
    const metrics = createMetrics(settings({ maxInstances: 2, rankIntervalMs: 60_000, queueWaitByOrg: true }), {
      limiter: () => undefined,
      catalog,
      now: () => now,
    })
    const hit = (instance: string, n: number) => {
      for (let i = 0; i < n; i++) metrics.requestFinished(record({ endpoint: EP, instance }))
    }
    hit('a', 1)
    hit('b', 1)
    hit('c', 5)
    hit('d', 3)
    let s = parsePromText((await metrics.scrape()).body)
    const count = (org: string) => valueOf(s, 'sluice_requests_total', { endpoint: EP, org, outcome: 'forwarded' })
    expect([count('a'), count('b'), count('_other')]).toEqual([1, 1, 8])
    expect(valueOf(s, 'sluice_metrics_orgs')).toBe(2)
    expect(select(s, 'sluice_requests_total', { org: 'c' })).toHaveLength(0)

    // A window later, c and d were the busiest: they take the slots, a and b's series go away.
    now += 60_000
    s = parsePromText((await metrics.scrape()).body)
    expect(new Set(select(s, 'sluice_requests_total').map((x) => x.labels.org))).toEqual(new Set(['_other']))
    expect(select(s, 'sluice_queue_wait_seconds_count', { org: 'a' })).toHaveLength(0)
    hit('c', 1)
    hit('a', 1)
    s = parsePromText((await metrics.scrape()).body)
    expect(count('c')).toBe(1)
    expect(count('_other')).toBe(9)
    expect(select(s, 'sluice_requests_total', { org: 'a' })).toHaveLength(0)
    expect(new Set(select(s, 'sluice_requests_total').map((x) => x.labels.org))).toEqual(new Set(['c', '_other']))

    // Another window later a is the busiest again: it gets a series of its own anew, counted from zero.
    hit('a', 10)
    now += 60_000
    s = parsePromText((await metrics.scrape()).body)
    hit('a', 2)
    s = parsePromText((await metrics.scrape()).body)
    expect(count('a')).toBe(2)
    expect(valueOf(s, 'sluice_queue_wait_seconds_count', { endpoint: EP, org: 'a' })).toBe(2)
  })
})
