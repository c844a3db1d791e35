import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/metrics/index.js'
import { parsePromText, select, valueOf } from './prom-text.js'
import { catalog, record, settings } from './records.js'

// The app label is bounded like org (README "Apps: identity, access and keys", docs/observability.md):
// the first metrics.maxApps apps get series of their own, the rest `_other`; re-ranking hands the
// slots to the busiest apps and drops the series of those that lost theirs.

const EP = 'POST /accounts/search'

describe('the app label', () => {
  it('keeps maxApps apps of their own, the rest `_other`, and re-ranks them by requests', async () => {
    let now = 1_000_000
    const metrics = createMetrics(settings({ maxApps: 2, rankIntervalMs: 60_000 }), {
      limiter: () => undefined,
      catalog,
      now: () => now,
    })
    const hit = (app: string, n: number) => {
      for (let i = 0; i < n; i++) metrics.requestFinished(record({ endpoint: EP, app, queueSeconds: 0.5 }))
    }
    hit('web', 1)
    hit('cron', 1)
    hit('batch', 5)
    hit('report', 3)
    let s = parsePromText((await metrics.scrape()).body)
    const count = (app: string) => valueOf(s, 'sluice_app_requests_total', { app, outcome: 'forwarded' })
    const apps = (name: string) => new Set(select(s, name).map((x) => x.labels.app))
    expect([count('web'), count('cron'), count('_other')]).toEqual([1, 1, 8])
    expect(apps('sluice_app_requests_total')).toEqual(new Set(['web', 'cron', '_other']))
    expect(apps('sluice_app_queue_wait_seconds_count')).toEqual(new Set(['web', 'cron', '_other']))

    // A window later batch and report were the busiest: they take the slots, web's and cron's series go away.
    now += 60_000
    s = parsePromText((await metrics.scrape()).body)
    expect(apps('sluice_app_requests_total')).toEqual(new Set(['_other']))
    hit('batch', 1)
    hit('web', 1)
    s = parsePromText((await metrics.scrape()).body)
    expect(count('batch')).toBe(1)
    expect(count('_other')).toBe(9)
    expect(apps('sluice_app_requests_total')).toEqual(new Set(['batch', '_other']))
    expect(apps('sluice_app_queue_wait_seconds_count')).toEqual(new Set(['batch', '_other']))
  })

  it('counts requests refused before the app was known as `_unknown`, and 401/403 by app', async () => {
    const metrics = createMetrics(settings(), { limiter: () => undefined, catalog })
    metrics.requestFinished(record({ endpoint: EP, app: undefined, status: 401, outcome: 'unauthenticated' }))
    metrics.requestFinished(record({ endpoint: EP, app: 'web', status: 403, outcome: 'forbidden' }))
    const s = parsePromText((await metrics.scrape()).body)
    expect(valueOf(s, 'sluice_app_requests_total', { app: '_unknown', code: '401', outcome: 'unauthenticated' })).toBe(
      1,
    )
    expect(valueOf(s, 'sluice_app_requests_total', { app: 'web', code: '403', outcome: 'forbidden' })).toBe(1)
  })

  it('sluice_app_permits_held follows grants and releases, counts a release once, and folds apps over maxApps into `_other`', async () => {
    let now = 1_000_000
    const metrics = createMetrics(settings({ maxApps: 1, rankIntervalMs: 60_000 }), {
      limiter: () => undefined,
      catalog,
      now: () => now,
    })
    const held = async (): Promise<Record<string, number>> =>
      Object.fromEntries(
        select(parsePromText((await metrics.scrape()).body), 'sluice_app_permits_held').map((x): [string, number] => [
          x.labels.app!,
          x.value,
        ]),
      )

    expect(await held()).toEqual({})
    const web1 = metrics.permitHeld('web')
    const web2 = metrics.permitHeld('web')
    const batch = metrics.permitHeld('batch')
    expect(await held()).toEqual({ web: 2, _other: 1 })
    web1()
    web1() // a second call of the same release changes nothing
    expect(await held()).toEqual({ web: 1, _other: 1 })
    web2()
    batch()
    // an app that held permits shows 0 while it holds none, rather than vanishing
    expect(await held()).toEqual({ web: 0, _other: 0 })

    // batch was busier in the window: it takes web's slot; web's permits now count as `_other`
    for (let i = 0; i < 5; i++) metrics.requestFinished(record({ endpoint: EP, app: 'batch' }))
    now += 60_000
    const web3 = metrics.permitHeld('web')
    const batch2 = metrics.permitHeld('batch')
    expect(await held()).toEqual({ batch: 1, _other: 1 })
    web3()
    batch2()
    expect(await held()).toEqual({ batch: 0, _other: 0 })
  })
})
