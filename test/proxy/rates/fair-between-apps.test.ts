import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy, statusOf } from '../../support/proxy.js'
import { send, until } from '../../support/http.js'
import { basicAuth, withSim } from '../../support/sim.js'

const ENDPOINT = 'GET /accounts/{id}/contacts'
const RATE = { requests: 2, windowMs: 1500 }

describe("a rate-bound key: starts go in the fair queue's order between apps", () => {
  it("a later app's requests reach the API ahead of a busy app's backlog, and the rate holds", async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: RATE } })
    // two in progress at once: at most two reservations run ahead of the fair queue
    const proxy = await startProxy({
      upstream: sim.apiUrl,
      requestLog: false,
      limits: { rates: { [ENDPOINT]: RATE }, overrides: { [ENDPOINT]: 2 }, rateMarginMs: 100 },
    })
    onTestFinished(() => proxy.close())
    const get = (seq: string, app: string) =>
      send(proxy.url, `/v2/accounts/1/contacts`, {
        headers: { authorization: basicAuth('org1'), 'x-test-seq': seq, 'x-sluice-app': app },
      })
    const all: Promise<unknown>[] = []
    for (let i = 1; i <= 8; i++) all.push(get(`batch${i}`, 'batch'))
    await until(async () => ((await statusOf(proxy, 'org1', ENDPOINT))?.queued ?? 0) >= 5, 'the batch backlog queued')
    all.push(get('web1', 'web'), get('web2', 'web'))
    await until(async () => ((await statusOf(proxy, 'org1', ENDPOINT))?.queued ?? 0) >= 6, 'web queued')
    await Promise.all(all)
    const order = sim
      .stats()
      .arrivals.filter((a) => a.endpoint === ENDPOINT && a.outcome === 'admitted')
      .map((a) => String(a.seq))
    expect(order).toHaveLength(10)
    // first come, first served would send web last (positions 8 and 9)
    expect(order.indexOf('web1')).toBeLessThan(6)
    expect(order.indexOf('web2')).toBeLessThan(7)
    expect(sim.rateStats()[`org1 ${ENDPOINT}`]).toMatchObject({ overRate: 0, maxInWindow: 2 })
  })
})
