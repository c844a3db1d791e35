import { describe, expect, it } from 'vitest'
import type { KeyStatus, Limiter, LimiterStatus } from '../../src/limiter/types.js'
import { createMetrics } from '../../src/metrics/index.js'
import { parsePromText, select } from './prom-text.js'
import { catalog, settings } from './records.js'

// docs/observability.md "Alerts", SluicePermitsOverLimit and SluiceLearnedLimitAtFloor: each limiter key
// is compared with its own limit before the org label folds organisations over metrics.maxInstances
// into `_other`, whose summed in-flight and summed limits say nothing about any one key. The limiter
// here only answers status(): a key above its limit is what the real one never produces.

const key = (instance: string, inFlight: number, limit: number, learned?: number): KeyStatus => ({
  instance,
  endpoint: 'GET /donations/{id}',
  limit,
  inFlight,
  queued: 0,
  oldestWaitMs: 0,
  ...(learned === undefined ? {} : { learned: { value: learned, ceiling: 50 } }),
})

const limiterWith = (keys: KeyStatus[]): Limiter =>
  ({
    backend: 'memory',
    mode: () => 'memory',
    ready: () => true,
    status: (): Promise<LimiterStatus> => Promise.resolve({ backend: 'memory', mode: 'memory', keys }),
  }) as unknown as Limiter

async function scrape(keys: KeyStatus[], maxInstances: number, learnedFloor?: number) {
  const limiter = limiterWith(keys)
  const metrics = createMetrics(settings({ maxInstances }), {
    limiter: () => limiter,
    catalog,
    ...(learnedFloor === undefined ? {} : { learnedFloor }),
  })
  return parsePromText((await metrics.scrape()).body)
}

describe('sluice_keys_over_limit and sluice_learned_limits_at_floor', () => {
  it('count a key above its own limit inside `_other`, where the summed row is below the summed limit', async () => {
    // org1 takes the only slot; org2 (6 of 5) and org3 (0 of 5) are `_other`: 6 in flight of a summed 10
    const samples = await scrape([key('org1', 2, 5), key('org2', 6, 5), key('org3', 0, 5)], 1)
    const other = { endpoint: 'GET /donations/{id}', org: '_other' }
    expect(select(samples, 'sluice_permits_in_flight', other).map((s) => s.value)).toEqual([6])
    expect(select(samples, 'sluice_permit_limit', other).map((s) => s.value)).toEqual([10])
    expect(select(samples, 'sluice_keys_over_limit').map((s) => [s.labels, s.value])).toEqual([[other, 1]])
  })

  it('have no series while no key is over its limit or at its floor', async () => {
    const samples = await scrape([key('org1', 5, 5), key('org2', 1, 5, 5)], 100)
    expect(select(samples, 'sluice_keys_over_limit')).toEqual([])
    expect(select(samples, 'sluice_learned_limits_at_floor')).toEqual([])
  })

  it('count learned limits at learning.floor, not fixed limits that happen to be as low', async () => {
    const keys = [key('org1', 0, 2, 2.4), key('org2', 0, 1, 1.2), key('org3', 0, 1), key('org4', 0, 3, 3)]
    const at = (floor: number | undefined, samples: Awaited<ReturnType<typeof scrape>>) =>
      select(samples, 'sluice_learned_limits_at_floor').map((s) => [s.labels.org, s.value, floor])
    expect(at(undefined, await scrape(keys, 100))).toEqual([['org2', 1, undefined]])
    expect(at(2, await scrape(keys, 100, 2))).toEqual([
      ['org1', 1, 2],
      ['org2', 1, 2],
    ])
  })
})
