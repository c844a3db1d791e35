import { describe, expect, it } from 'vitest'
import { send, until, type Answer } from '../support/http.js'
import { startProxy, statusOf, type RunningProxy } from '../support/proxy.js'
import { basicAuth, keyStats, startSim, type Sim } from '../support/sim.js'

const SEARCH = '/v2/accounts/search'
const SEARCH_ID = 'POST /accounts/search'
const BODY = '{"searchFields":[],"outputFields":["Account ID"]}'
const search = (proxy: RunningProxy, headers: Record<string, string> = {}): Promise<Answer> =>
  send(proxy.url, SEARCH, {
    method: 'POST',
    headers: { authorization: basicAuth('org1'), 'content-type': 'application/json', ...headers },
    body: BODY,
  })

/** A sim at 200 ms and a proxy in front of it, 100 searches queued on the limit-1 key, 5 of them done (the forecast's minimum). */
async function hundredQueued(
  settings: Record<string, unknown>,
): Promise<{ sim: Sim; proxy: RunningProxy; queued: Promise<Answer>[]; close(): Promise<void> }> {
  const sim = await startSim({ latencyMs: 200 })
  const proxy = await startProxy({ upstream: sim.apiUrl, ...settings })
  const queued = Array.from({ length: 100 }, () => search(proxy))
  await until(
    () => (keyStats(sim, 'org1', SEARCH_ID)?.requests ?? 0) >= 6,
    '5 searches done and a sixth in progress',
    20_000,
  )
  return {
    sim,
    proxy,
    queued,
    async close() {
      await proxy.close() // the queued are answered 503 at once
      await Promise.all(queued)
      await sim.close()
    },
  }
}

describe('a wait predicted past the deadline is refused at once (failFast)', () => {
  it('100 queued on a limit-1 key, then one with x-sluice-max-wait: 1 → 503 SLUICE_WAIT_TOO_LONG with a Retry-After near the real wait', async () => {
    const run = await hundredQueued({ failFast: { header: true } })
    try {
      const ahead = (await statusOf(run.proxy, 'org1', SEARCH_ID))!.queued
      const answer = await search(run.proxy, { 'x-sluice-max-wait': '1', 'x-request-id': 'impatient' })
      const aheadAfter = (await statusOf(run.proxy, 'org1', SEARCH_ID))!.queued

      expect(answer.status).toBe(503)
      const [error, ...more] = answer.json<{ code: string; message: string }[]>()
      expect(more).toEqual([])
      expect(error!.code).toBe('SLUICE_WAIT_TOO_LONG')
      expect(error!.message).toMatch(
        /^The queue for POST \/accounts\/search \(instance org1\) is predicted to take \d+ ms, longer than this request may wait \(\d+ ms\); try again after Retry-After$/,
      )
      expect(Object.keys(error!).sort()).toEqual(['code', 'message'])
      // The real wait is the queue ahead times the time a search takes on this machine now: timed over
      // the next five searches (at 200 ms each on an idle machine, longer on a busy one).
      const retryAfter = Number(answer.headers['retry-after'])
      const doneBefore = keyStats(run.sim, 'org1', SEARCH_ID)!.requests
      const started = Date.now()
      await until(() => keyStats(run.sim, 'org1', SEARCH_ID)!.requests >= doneBefore + 5, 'five more searches', 30_000)
      const perSearch = (Date.now() - started) / 5 / 1000
      expect(retryAfter).toBeGreaterThanOrEqual(Math.floor(aheadAfter * perSearch * 0.5))
      expect(retryAfter).toBeLessThanOrEqual(Math.ceil(ahead * perSearch * 2) + 1)
      expect(Number(answer.headers['x-sluice-queue-wait-ms'])).toBeGreaterThan(retryAfter * 1000 - 1000)
      // Refused before it queued (a wait that ran out would be queue_timeout): the deadline did not end it.
      const line = run.proxy.logs.find((l) => l.msg === 'request' && l.reqId === 'impatient')
      expect(line).toMatchObject({ status: 503, outcome: 'wait_too_long' })
    } finally {
      await run.close()
    }
  })

  it('with failFast.enabled false the same request waits until its deadline: 503 SLUICE_QUEUE_TIMEOUT', async () => {
    const run = await hundredQueued({ failFast: { enabled: false } })
    try {
      const answer = await search(run.proxy, { 'x-sluice-max-wait': '1' })
      expect(answer.status).toBe(503)
      expect(answer.json<{ code: string }[]>()[0]!.code).toBe('SLUICE_QUEUE_TIMEOUT')
      expect(answer.headers['x-sluice-queue-wait-ms']).toBeUndefined()
    } finally {
      await run.close()
    }
  })

  it('a request that fits its deadline waits and is served; with failFast.header it learns its predicted wait', async () => {
    const sim = await startSim({ latencyMs: 200 })
    const proxy = await startProxy({ upstream: sim.apiUrl, failFast: { header: true } })
    try {
      const first = Array.from({ length: 6 }, () => search(proxy))
      await until(() => (keyStats(sim, 'org1', SEARCH_ID)?.requests ?? 0) >= 6, '5 searches done')
      const more = Array.from({ length: 3 }, () => search(proxy, { 'x-sluice-max-wait': '30' }))
      const answers = await Promise.all([...first, ...more])
      expect(answers.map((a) => a.status)).toEqual(Array(9).fill(200))
      // the last three queued after five permits had come back: each was told its predicted wait
      for (const a of answers.slice(6)) expect(a.headers['x-sluice-queue-wait-ms']).toMatch(/^\d+$/)
      // the first ones were queued before anything was known: no prediction, no header
      expect(answers[1]!.headers['x-sluice-queue-wait-ms']).toBeUndefined()
    } finally {
      await proxy.close()
      await sim.close()
    }
  })
})
