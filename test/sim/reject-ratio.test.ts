import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { keyStats, withSim } from '../support/sim.js'

describe('rejectRatio: simulated pushback', () => {
  it('answers that fraction 429 even under the limit, as decided by the random source', async () => {
    const draws = [0.1, 0.9, 0.49, 0.5]
    const sim = await withSim({ rejectRatio: 0.5, random: () => draws.shift() ?? 0.99 })
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) {
      const res = await request(`${sim.apiUrl}/webhooks`)
      statuses.push(res.statusCode)
      if (res.statusCode === 429) {
        expect(await res.body.json()).toEqual([
          { code: '429', message: 'Too many requests for GET /webhooks of instance default (simulated pushback)' },
        ])
      } else {
        await res.body.dump()
      }
    }
    expect(statuses).toEqual([429, 200, 429, 200])
    expect(keyStats(sim, 'default', 'GET /webhooks')).toMatchObject({
      requests: 4,
      rejected429: 2,
      pushback429: 2,
      maxInProgress: 1,
    })
    expect(sim.stats().arrivals.map((a) => a.outcome)).toEqual(['pushback', 'admitted', 'pushback', 'admitted'])
  })

  it('refuses a ratio outside 0-1', async () => {
    await expect(withSim({ rejectRatio: 1.5 })).rejects.toThrow(/invalid sim options: rejectRatio/)
  })
})
