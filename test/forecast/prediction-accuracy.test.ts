import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { send, type Answer } from '../support/http.js'
import { useSimAndProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { parsePromText, select } from '../metrics/prom-text.js'

/** Of the observations of one series of the prediction-error histogram, the share with an error in (lo, hi] seconds. */
function share(samples: ReturnType<typeof parsePromText>, estimate: string, lo: number, hi: number): { share: number; count: number } {
  const buckets = select(samples, 'sluice_queue_wait_prediction_error_seconds_bucket', { estimate })
  const at = (le: number): number => buckets.find((b) => Number(b.labels.le) === le)!.value
  const count = buckets.find((b) => b.labels.le === '+Inf')!.value
  const below = Number.isFinite(lo) ? at(lo) : 0
  const upTo = Number.isFinite(hi) ? at(hi) : count
  return { share: (upTo - below) / count, count }
}

describe('wait predictions on a mixed run', () => {
  const stack = useSimAndProxy({ latencyMs: 200, jitterMs: 100 }, { requestLog: false })

  it('the lower bound (refusals) rarely exceeds the real wait; the estimate (Retry-After) is mostly within 0.25 s', async () => {
    // Two apps of two organisations: searches (limit 1) a little faster than they are served, account
    // reads (limit 5, distinct ids so none are shared) likewise; the queues grow for ~4 s.
    const answers: Promise<Answer>[] = []
    for (let tick = 0; tick < 40; tick++) {
      for (const org of ['org1', 'org2']) {
        const auth = basicAuth(org)
        if (tick % 2 === 0) {
          answers.push(send(stack.proxy.url, '/v2/accounts/search', { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: '{}' }))
        }
        for (let i = 0; i < 3; i++) answers.push(send(stack.proxy.url, `/v2/accounts/${tick * 10 + i}`, { headers: { authorization: auth } }))
      }
      await sleep(100)
    }
    const done = await Promise.all(answers)
    expect(done.filter((a) => a.status !== 200)).toEqual([])

    const samples = parsePromText(await (await fetch(stack.proxy.adminUrl + '/metrics')).text())
    const lowerOver = share(samples, 'lower_bound', 0.05, Infinity)
    const expectedNear = share(samples, 'expected', -0.25, 0.25)
    // enough waits were predicted for the shares to mean something
    expect(lowerOver.count).toBeGreaterThan(100)
    // The stated error (README "Failing fast on a predicted wait"): the floor a refusal is decided on
    // is above the real wait by more than 50 ms for at most 2% of requests, and the estimate sent as
    // Retry-After is within ±0.25 s of the real wait for at least 85%. (Three runs on a shared 2-core
    // machine measured 0% and 95-98%.)
    expect(lowerOver.share).toBeLessThanOrEqual(0.02)
    expect(expectedNear.share).toBeGreaterThanOrEqual(0.85)
  })
})
