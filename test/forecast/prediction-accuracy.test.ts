import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { send, type Answer } from '../support/http.js'
import { useSimAndProxy } from '../support/proxy.js'
import { basicAuth } from '../support/sim.js'
import { parsePromText, select } from '../metrics/prom-text.js'

/** Of the observations of one series of the prediction-error histogram, the share with an error in (lo, hi] seconds. */
function share(
  samples: ReturnType<typeof parsePromText>,
  estimate: string,
  lo: number,
  hi: number,
): { share: number; count: number } {
  const buckets = select(samples, 'sluice_queue_wait_prediction_error_seconds_bucket', { estimate })
  const at = (le: number): number => buckets.find((b) => Number(b.labels.le) === le)!.value
  const count = buckets.find((b) => b.labels.le === '+Inf')!.value
  const below = Number.isFinite(lo) ? at(lo) : 0
  const upTo = Number.isFinite(hi) ? at(hi) : count
  return { share: (upTo - below) / count, count }
}

describe('wait predictions on a mixed run through the proxy', () => {
  const stack = useSimAndProxy({ latencyMs: 200, jitterMs: 100 }, { requestLog: false })

  it('end to end through the sim, the floor refusals are decided on stays below the real wait', async () => {
    // Two apps of two organisations: searches (limit 1) a little faster than they are served, account
    // reads (limit 5, distinct ids so none are shared) likewise; the queues grow for ~4 s.
    const answers: Promise<Answer>[] = []
    for (let tick = 0; tick < 40; tick++) {
      for (const org of ['org1', 'org2']) {
        const headers = (): Record<string, string> => ({ authorization: basicAuth(org) })
        if (tick % 2 === 0) {
          answers.push(
            send(stack.proxy.url, '/v2/accounts/search', {
              method: 'POST',
              headers: { ...headers(), 'content-type': 'application/json' },
              body: '{}',
            }),
          )
        }
        for (let i = 0; i < 3; i++)
          answers.push(send(stack.proxy.url, `/v2/accounts/${tick * 10 + i}`, { headers: headers() }))
      }
      await sleep(100)
    }
    const done = await Promise.all(answers)
    expect(done.filter((a) => a.status !== 200)).toEqual([])

    // The floor a refusal is decided on, from the histogram: above the real wait by more than 50 ms
    // for at most 5% of the requests that queued, however busy the machine (a busy machine makes
    // waits longer, not shorter). The estimate's error is measured on a virtual clock, in
    // prediction-error.test.ts, where the machine cannot change it.
    const samples = parsePromText(await (await fetch(stack.proxy.adminUrl + '/metrics')).text())
    const lowerOver = share(samples, 'lower_bound', 0.05, Infinity)
    // about 100–110 of the 280 requests queue with a prediction (how many depends on the machine's speed):
    // enough for the 5% below to mean something
    expect(lowerOver.count).toBeGreaterThan(50)
    expect(lowerOver.share).toBeLessThanOrEqual(0.05)
  })
})
