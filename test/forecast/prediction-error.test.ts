import { setImmediate as turn } from 'node:timers/promises'
import { Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { ForecastingLimiter, predictedWaitOf } from '../../src/forecast/index.js'
import { MemoryLimiter } from '../../src/limiter/memory/index.js'
import type { Permit } from '../../src/limiter/types.js'
import { parsePromText, select } from '../metrics/prom-text.js'

/** A seeded random source, so the run is the same every time. */
function seeded(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = Math.imul(s ^ (s >>> 15), s | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Arrival {
  readonly at: number
  readonly key: { instance: string; endpoint: string }
  readonly limit: number
  readonly holdMs: number
}

/**
 * The real in-process limiter under the real forecasting limiter, on a virtual clock: arrivals and
 * releases happen at exact virtual times, so the predicted and the actual wait of every request are
 * known without any real time passing (a busy machine cannot change the figures).
 */
async function mixedRun(
  arrivals: Arrival[],
): Promise<{ waits: { expected: number; actual: number; holdMs: number }[]; registry: Registry }> {
  let now = 0
  const registry = new Registry()
  // failFast off: every request is served, so each prediction meets its real wait (the in-process
  // limiter times its deadline on the real clock; no deadline is near).
  const limiter = new ForecastingLimiter(
    new MemoryLimiter(),
    { enabled: false, minSamples: 5, header: true },
    registry,
    () => now,
  )
  const releases: { at: number; permit: Permit }[] = []
  const waits: { expected: number; actual: number; holdMs: number }[] = []
  const pending: Promise<void>[] = []
  const queue = [...arrivals].sort((a, b) => a.at - b.at)
  while (queue.length > 0 || releases.length > 0) {
    releases.sort((a, b) => a.at - b.at)
    const release = releases[0]
    const arrival = queue[0]
    if (release !== undefined && (arrival === undefined || release.at <= arrival.at)) {
      releases.shift()
      now = release.at
      release.permit.release()
    } else {
      queue.shift()
      now = arrival!.at
      const arrivedAt = now
      const { holdMs } = arrival!
      pending.push(
        limiter
          .acquire(arrival!.key, { limit: arrival!.limit, deadline: Date.now() + 1e9, maxQueue: 1e6 })
          .then((permit) => {
            const expected = predictedWaitOf(permit)
            if (expected !== undefined) waits.push({ expected, actual: now - arrivedAt, holdMs })
            releases.push({ at: now + holdMs, permit })
          }),
      )
    }
    await turn() // grants resolve in this virtual instant
  }
  await Promise.all(pending)
  return { waits, registry }
}

describe('wait predictions on a mixed run, on a virtual clock', () => {
  it('the floor is above the real wait for at most 1%; the estimate is within half a mean hold for most', async () => {
    const random = seeded(21)
    const arrivals: Arrival[] = []
    // Two organisations; per organisation a search key (limit 1) asked a little faster than it is served,
    // and an account key (limit 5) likewise, over 6 s; every hold 200-300 ms.
    for (const org of ['org1', 'org2']) {
      for (let t = 0; t < 6_000; t += 150 + random() * 100) {
        arrivals.push({
          at: t,
          key: { instance: org, endpoint: 'POST /accounts/search' },
          limit: 1,
          holdMs: 200 + random() * 100,
        })
      }
      for (let t = 0; t < 6_000; t += 25 + random() * 30) {
        arrivals.push({
          at: t,
          key: { instance: org, endpoint: 'GET /accounts/{id}' },
          limit: 5,
          holdMs: 200 + random() * 100,
        })
      }
    }
    const { waits, registry } = await mixedRun(arrivals)
    expect(waits.length).toBeGreaterThan(200)

    // the floor refusals are decided on, from the histogram: never above the real wait
    const samples = parsePromText(await registry.metrics())
    const lower = select(samples, 'sluice_queue_wait_prediction_error_seconds_bucket', { estimate: 'lower_bound' })
    const count = lower.find((b) => b.labels.le === '+Inf')!.value
    expect(count).toBe(waits.length)
    const atMost = (le: string): number => lower.find((b) => b.labels.le === le)!.value / count
    // Stated in README "Spending fewer permits": the floor is above the real wait for at most 1% of
    // waits (3 of 329 in this run), and never by more than 50 ms.
    expect(atMost('0')).toBeGreaterThanOrEqual(0.99)
    expect(atMost('0.05')).toBe(1)

    // the estimate (Retry-After, x-sluice-queue-wait-ms) against the real wait, in mean holds (250 ms)
    const errors = waits.map((w) => Math.abs(w.expected - w.actual) / 250).sort((a, b) => a - b)
    const within = (units: number): number => errors.filter((e) => e <= units).length / errors.length
    // Stated in README "Spending fewer permits": within half a mean hold for 90%, within one for all
    // (this run: 94% and 100%; the median error is an eighth of a hold).
    expect(within(0.5)).toBeGreaterThanOrEqual(0.9)
    expect(within(1)).toBe(1)
  })
})
