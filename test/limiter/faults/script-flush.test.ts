import { describe, it } from 'vitest'
import { scriptFlush } from '../../support/faults.js'
import { expectNeverOverTheLimit, mark, sleep, startScenario, trafficFlows } from './scenario.js'
import { needs } from '../../support/tools.js'

/*
 * SCRIPT FLUSH under load (as after a failover to a server that never saw the scripts): every
 * script comes back as NOSCRIPT and is sent again in full; a re-sent acquire must never run after
 * its own withdrawal (docs/redis-limiter.md, "Scripts").
 */
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `SCRIPT FLUSH under load, again and again ${needs('redis-server')}`,
  () => {
    it('never over the limit, every request answered, nothing left behind', async () => {
      const s = await startScenario()
      for (let i = 0; i < 6; i++) {
        await scriptFlush(s.stack.redis)
        mark(s, 'SCRIPT FLUSH')
        await trafficFlows(s, 'traffic after SCRIPT FLUSH', 20)
        await sleep(s.leaseMs / 4)
      }
      await expectNeverOverTheLimit(s)
    }, 90_000)
  },
)
