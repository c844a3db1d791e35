import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/metrics/index.js'
import { REDIS_OPERATIONS } from '../../src/limiter/redis/index.js'
import { createVersioning } from '../../src/versioning/index.js'
import { versionSettingsSchema } from '../../src/versioning/settings.js'
import { catalog, record, settings } from './records.js'
import { has, needs } from '../support/tools.js'

// `promtool check metrics` lints a scrape: names, base units (seconds, not days or milliseconds),
// _total on counters, HELP on every metric. sluice's own metrics (sluice_*) must pass it whole.
const hasPromtool = has('promtool')

describe.skipIf(!hasPromtool)(`promtool check metrics ${needs('promtool')}`, () => {
  it('finds nothing to say about any sluice_* metric', async () => {
    const metrics = createMetrics(settings({ defaultMetrics: true, queueWaitByOrg: true }), {
      limiter: () => undefined,
      catalog,
      redisOperations: REDIS_OPERATIONS,
    })
    const versioning = createVersioning(versionSettingsSchema.parse({}), {
      registry: metrics.registry,
      now: () => new Date('2026-09-01T00:00:00Z'),
      log: { warn: () => {}, error: () => {}, info: () => {} },
    })
    // every family with a series: a request of each kind, a 429, a lost lease, a Redis command, versions
    for (const version of ['2.9', '2.11', undefined]) {
      try {
        versioning.decide(version, { id: 'GET /accounts/{id}/contacts' })
      } catch {
        // counted all the same
      }
    }
    metrics.requestFinished(record({ queueSeconds: 0.2, retries: 1 }))
    metrics.upstreamAttempt('GET /accounts/{id}/contacts', 0.1)
    metrics.upstream429('GET /accounts/{id}/contacts', 'org1')
    metrics.observer.leaseLost?.({ instance: 'org1', endpoint: 'GET /accounts/{id}/contacts' })
    metrics.observer.redisCommand?.('acquire', 0.001, true)

    const { body } = await metrics.scrape()
    expect(body).toContain('sluice_version_requests_total')
    const lint = spawnSync('promtool', ['check', 'metrics'], { input: body, encoding: 'utf8' })
    const problems = `${lint.stdout}\n${lint.stderr}`.split('\n').filter((line) => line.startsWith('sluice_'))
    expect(problems).toEqual([])
  })
})
