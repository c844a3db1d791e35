import { describe, it } from 'vitest'
import {
  OUTAGE_LEASE_MS,
  judgeFromOneLeaseAfter,
  everyReplicaIn,
  expectNeverOverTheLimit,
  mark,
  sleep,
  startScenario,
  trafficFlows,
} from './scenario.js'
import { needs } from '../../support/tools.js'

/*
 * Redis stopped under load and started again (with its data, as a restart with persistence does),
 * in each fallback mode (README, "Redis: one limit for every replica"). Judged from one lease after
 * Redis is back: `open`, and `local` for a key whose limit is below the number of replicas, may put
 * a key over its limit while Redis is away — by design — and that surplus must end within one lease
 * after it is back. `closed` answers 503 meanwhile.
 */
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `Redis stopped under load and started again ${needs('redis-server')}`,
  () => {
    for (const fallback of ['local', 'open', 'closed'] as const) {
      it(`fallback ${fallback}: never over the limit one lease after Redis is back, every request answered`, async () => {
        const s = await startScenario({ leaseMs: OUTAGE_LEASE_MS, env: { SLUICE_REDIS_FALLBACK: fallback } })
        for (let round = 0; round < 2; round++) {
          const downAt = mark(s, 'Redis stopping')
          await s.stack.redis.stop({ keepData: true })
          await everyReplicaIn(s, fallback)
          if (fallback !== 'closed') await trafficFlows(s, 'traffic through the fallback')
          await sleep(s.leaseMs)
          await s.stack.redis.start()
          const backAt = mark(s, 'Redis started')
          judgeFromOneLeaseAfter(s, downAt, backAt)
          await everyReplicaIn(s, 'redis')
          await trafficFlows(s, 'traffic through Redis again', 60)
          await sleep(s.leaseMs)
        }
        await expectNeverOverTheLimit(s, { okStatuses: fallback === 'closed' ? [200, 503] : [200] })
      }, 90_000)
    }
  },
)
