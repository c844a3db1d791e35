import { describe, expect, it } from 'vitest'
import { fuzzHttpFront } from '../../scripts/fuzz/front.js'

// A small, seeded sample of `npm run fuzz` (README "Development"): generated raw HTTP inputs against
// the real proxy in front of an API stand-in that checks what reaches it.
describe('the HTTP front under generated input', () => {
  it('no crash, no hang, no 5xx of its own, every own answer in the error shape, nothing malformed reaches the API', async () => {
    const counts = await fuzzHttpFront({ inputs: 1_500, maxMs: 120_000, seed: 16, concurrency: 16 })
    expect(counts.examples).toEqual([])
    expect(counts).toMatchObject({ hangs: 0, ownServerErrors: 0, badShapes: 0, malformedAtApi: 0, crashes: 0 })
    // the sample went deep enough to matter: answers of sluice's own and requests that reached the API
    expect(counts.inputs).toBe(1_500)
    expect(counts.reachedApi).toBeGreaterThan(50)
    expect(counts.answers['4xx']).toBeGreaterThan(500)
  }, 180_000)
})
