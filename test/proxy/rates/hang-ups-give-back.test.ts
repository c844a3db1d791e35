import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy, type RunningProxy } from '../../support/proxy.js'
import { send } from '../../support/http.js'
import { uniquePrefix } from '../../support/redis.js'
import { basicAuth, withSim, type Sim } from '../../support/sim.js'
import { useRedis } from '../../support/use-redis.js'

const redis = useRedis()
const ENDPOINT = 'GET /accounts/{id}/contacts'
const RATE = { requests: 5, windowMs: 1000 }

/** 120 requests of one app that hang up after 40 ms (four clients, one after another), then one of another app willing to wait 10 s. */
async function hangUpsThenPatient(sim: Sim, bulk: RunningProxy, web: RunningProxy): Promise<number> {
  const client = async (c: number): Promise<void> => {
    for (let i = 0; i < 30; i++)
      await send(bulk.url, `/v2/accounts/${c * 100 + i}/contacts`, {
        headers: { authorization: basicAuth('org1'), 'x-sluice-app': 'bulk' },
        signal: AbortSignal.timeout(40),
      }).catch(() => undefined)
  }
  await Promise.all([0, 1, 2, 3].map(client))
  const patient = await send(web.url, '/v2/accounts/999/contacts', {
    headers: { authorization: basicAuth('org1'), 'x-sluice-app': 'web', 'x-sluice-max-wait': '10' },
  })
  expect(sim.rateStats()[`org1 ${ENDPOINT}`]?.overRate ?? 0).toBe(0)
  return patient.status
}

describe('starts not used are given back: hang-ups cannot push another app out', () => {
  it("in process: 120 hang-ups after 40 ms on a 5/s endpoint, then another app's request starts within its 10 s", async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: RATE }, latencyMs: 5 })
    const proxy = await startProxy({
      upstream: sim.apiUrl,
      requestLog: false,
      limits: { rates: { [ENDPOINT]: RATE }, rateMarginMs: 100 },
    })
    onTestFinished(() => proxy.close())
    expect(await hangUpsThenPatient(sim, proxy, proxy)).toBe(200)
  })

  it('two replicas on Redis: the hang-ups on one, the patient request on the other', async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: RATE }, latencyMs: 5 })
    const shared = {
      upstream: sim.apiUrl,
      requestLog: false,
      limits: { rates: { [ENDPOINT]: RATE }, rateMarginMs: 100 },
      redis: { url: redis.url, keyPrefix: uniquePrefix('rates-hangup'), leaseMs: 1000 },
    }
    const a = await startProxy(shared)
    const b = await startProxy(shared)
    onTestFinished(() => Promise.all([a.close(), b.close()]).then(() => undefined))
    expect(await hangUpsThenPatient(sim, a, b)).toBe(200)
  })
})
