import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/metrics/index.js'
import { createVersioning } from '../../src/versioning/index.js'
import { versionSettingsSchema } from '../../src/versioning/settings.js'
import { parsePromText, select } from './prom-text.js'
import { catalog, settings } from './records.js'

const EP = { id: 'GET /accounts/{id}/contacts' }
const quiet = { info: () => {}, warn: () => {}, error: () => {} }

describe('sluice_version_requests_total by organisation', () => {
  it('carries the org label of the metrics, bounded by maxInstances, and drops the series of an organisation that loses its slot', async () => {
    let now = 1_000_000
    const metrics = createMetrics(settings({ maxInstances: 1, rankIntervalMs: 60_000 }), {
      limiter: () => undefined,
      catalog,
      now: () => now,
    })
    const versioning = createVersioning(versionSettingsSchema.parse({}), {
      now: () => new Date('2026-08-01T00:00:00Z'),
      log: quiet,
      registry: metrics.registry,
      orgs: metrics.orgs,
    })
    const decide = (version: string | undefined, instance: string) => {
      try {
        versioning.decide(version, EP, instance)
      } catch {
        // malformed and retired are counted all the same
      }
    }
    decide('2.11', 'a')
    decide('2.11', 'a')
    decide('2.7', 'a') // retired
    decide('2.11', 'b') // no room: _other
    decide('not-a-version', 'a')
    decide(undefined, `${'x'.repeat(70)}`) // not an organisation id: _invalid

    const scrape = async () => select(parsePromText((await metrics.scrape()).body), 'sluice_version_requests_total')
    const rows = (await scrape()).map((s) => [s.labels.version, s.labels.state, s.labels.org, s.value]).sort()
    expect(rows).toEqual(
      [
        ['2.11', 'supported', 'a', 2],
        ['2.11', 'supported', '_other', 1],
        ['2.7', 'retired', 'a', 1],
        ['invalid', 'invalid', 'a', 1],
        ['none', 'absent', '_invalid', 1],
      ].sort(),
    )

    // b is busier in the next window: it takes the one slot, and a's series go with the re-ranking
    for (let i = 0; i < 3; i++) decide('2.11', 'b')
    metrics.requestFinished({
      requestId: 'r',
      method: 'GET',
      endpoint: EP.id,
      template: '/accounts/{id}/contacts',
      instance: 'b',
      app: undefined,
      status: 200,
      outcome: 'forwarded',
      version: '2.11',
      upstreamVersion: '2.11',
      totalSeconds: 0,
      queueSeconds: 0,
      upstreamSeconds: 0,
      retries: 0,
      upstream429s: 0,
    })
    now += 60_000
    const after = await scrape()
    expect(after.filter((s) => s.labels.org === 'a')).toEqual([])
    decide('2.11', 'b')
    expect((await scrape()).find((s) => s.labels.org === 'b')?.value).toBe(1)
  })
})
