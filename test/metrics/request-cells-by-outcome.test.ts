import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/metrics/index.js'
import type { Outcome } from '../../src/record/record.js'
import { parsePromText, valueOf } from './prom-text.js'
import { catalog, record, settings } from './records.js'

// sluice_requests_total and sluice_app_requests_total find a request's cell without a key string:
// through Maps by status, outcome and method label (src/metrics/request-metrics.ts, app-metrics.ts).
// Every (status, outcome, method) keeps a series of its own, for the outcomes there are and for any
// added later — here one the Outcome type does not have yet, as a new outcome would be before its tests.

const OUTCOMES: readonly Outcome[] = [
  'forwarded',
  'queue_full',
  'queue_timeout',
  'client_aborted',
  'rejected_version',
  'bad_request',
  'upstream_busy',
  'upstream_error',
  'unauthenticated',
  'forbidden',
  'unavailable',
  'memory_budget',
  'client_timeout',
  'internal_error',
  'wait_too_long',
  'coalesced',
  'cache_hit',
]
const ADDED_LATER = ['a_17th_outcome', 'an_18th_outcome'] as unknown as readonly Outcome[]
const STATUSES = [0, 200, 201, 202, 401, 503, 999]
const METHODS = ['GET', 'HEAD', 'POST', 'PATCH', 'OPTIONS', 'PROPFIND']

describe('request counter cells', () => {
  it('every (status, outcome, method) counts in its own series, per org and per app', async () => {
    const metrics = createMetrics(settings({ maxApps: 0 }), { limiter: () => undefined, catalog })
    const expected = new Map<string, number>()
    let n = 0
    for (const outcome of [...OUTCOMES, ...ADDED_LATER]) {
      for (const status of STATUSES) {
        for (const method of METHODS) {
          // a different count for each label set, so two sharing a cell cannot add up to the right figures
          const times = 1 + (n++ % 3)
          for (let i = 0; i < times; i++)
            metrics.requestFinished(record({ endpoint: 'GET /donations/{id}', status, outcome, method, app: 'web' }))
          const label = `${status}|${outcome}|${method === 'PROPFIND' ? 'other' : method}`
          expected.set(label, (expected.get(label) ?? 0) + times)
        }
      }
    }
    const s = parsePromText((await metrics.scrape()).body)
    for (const [label, count] of expected) {
      const [code, outcome, method] = label.split('|') as [string, string, string]
      expect(
        valueOf(s, 'sluice_requests_total', { endpoint: 'GET /donations/{id}', org: 'org1', code, outcome, method }),
        label,
      ).toBe(count)
    }
    const byApp = new Map<string, number>()
    for (const [label, count] of expected) {
      const [code, outcome] = label.split('|') as [string, string]
      byApp.set(`${code}|${outcome}`, (byApp.get(`${code}|${outcome}`) ?? 0) + count)
    }
    for (const [label, count] of byApp) {
      const [code, outcome] = label.split('|') as [string, string]
      expect(valueOf(s, 'sluice_app_requests_total', { app: 'web', code, outcome }), label).toBe(count)
    }
  })
})
