import { describe, expect, it } from 'vitest'
import { LearnedLimits } from '../../../src/limiter/learning/store.js'

// LearnedLimits.list keeps the last `max` live entries in a ring (src/limiter/learning/store.ts). With a
// `max` above the live count the ring never wraps, so that list is the plain newest-first copy; a
// smaller `max` must give its first `max` entries, whatever the history and expiry.
describe('learned limits list: the ring gives the newest-first copy, cut at max', () => {
  it('matches on random histories, several max values, with expiry', () => {
    let seed = 42
    const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
    let listed = 0
    for (let run = 0; run < 300; run++) {
      let now = 0
      const store = new LearnedLimits(() => now)
      const bounds = { start: 5, ceiling: 5, floor: 1 }
      const ops = rnd(200)
      for (let i = 0; i < ops; i++) {
        now += rnd(50)
        store.apply(`k${rnd(40)}`, bounds, 100 + rnd(2_000), {
          outcome: 'throttled',
          held: 5,
          saturated: true,
          grantedAt: now - 1,
        })
      }
      now += rnd(500)
      const all = store.list(1_000_000).map((e) => e.id)
      for (const max of [1, 2, 3, 7, 40, 1_000]) {
        expect(store.list(max).map((e) => e.id)).toEqual(all.slice(0, max))
      }
      listed += all.length
    }
    // the histories are not all empty or all expired
    expect(listed).toBeGreaterThan(1_000)
  })
})
