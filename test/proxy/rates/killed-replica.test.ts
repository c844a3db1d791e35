import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy } from '../../support/proxy.js'
import { send, until } from '../../support/http.js'
import { spawnProxy } from '../../support/process.js'
import { uniquePrefix } from '../../support/redis.js'
import { basicAuth, withSim } from '../../support/sim.js'
import { useRedis } from '../../support/use-redis.js'

const redis = useRedis()
const ENDPOINT = 'GET /accounts/{id}/contacts'
const RATE = { requests: 3, windowMs: 1000 }

describe('a replica killed holding reservations of a rate', () => {
  it('its reserved starts are spent, never handed to another: the survivor stays within the rate', async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: RATE }, latencyMs: 5 })
    const prefix = uniquePrefix('rates-kill')
    const limits = { rates: { [ENDPOINT]: RATE }, rateMarginMs: 250 }
    const doomed = await spawnProxy({
      SLUICE_UPSTREAM: sim.apiUrl,
      SLUICE_REDIS_URL: redis.url,
      SLUICE_REDIS_KEY_PREFIX: prefix,
      SLUICE_REDIS_LEASE_MS: '1000',
      SLUICE_REQUEST_LOG: 'false',
      SLUICE_LIMITS_RATES: JSON.stringify(limits.rates),
      SLUICE_LIMITS_RATE_MARGIN_MS: String(limits.rateMarginMs),
    })
    onTestFinished(async () => {
      await doomed.stop('SIGKILL')
    })
    const survivor = await startProxy({
      upstream: sim.apiUrl,
      requestLog: false,
      limits,
      redis: { url: redis.url, keyPrefix: prefix, leaseMs: 1000 },
    })
    onTestFinished(() => survivor.close())
    const get = (proxy: { url: string }, i: number) =>
      send(proxy.url, `/v2/accounts/${i}/contacts`, { headers: { authorization: basicAuth('org1') } })
    // five permits on the doomed replica, each with a start reserved up to about two seconds ahead
    const doomedAnswers = Array.from({ length: 5 }, (_, i) => get(doomed, i).catch(() => undefined))
    await until(() => (sim.rateStats()[`org1 ${ENDPOINT}`]?.admitted ?? 0) >= 1, 'the doomed replica started one')
    await doomed.stop('SIGKILL')
    await Promise.all(doomedAnswers)
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => get(survivor, 10 + i)))
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200))
    const stats = sim.rateStats()[`org1 ${ENDPOINT}`]!
    expect(stats.overRate).toBe(0)
    expect(stats.maxInWindow).toBeLessThanOrEqual(3)
  })
})
