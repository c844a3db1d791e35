import { describe, expect, it } from 'vitest'
import { killPubSub } from '../../support/faults.js'
import { expectNeverOverTheLimit, mark, sleep, startScenario, trafficFlows } from './scenario.js'
import { needs } from '../../support/tools.js'

/*
 * CLIENT KILL TYPE pubsub under load: every replica's grant channel is cut; messages sent until it
 * resubscribes are lost, and the next sync finds those grants (docs/redis-limiter.md, "How a wait works").
 */
describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `the pub/sub connections killed under load, again and again ${needs('redis-server')}`,
  () => {
    it('never over the limit, every request answered, nothing left behind', async () => {
      const s = await startScenario()
      let killed = 0
      for (let i = 0; i < 4; i++) {
        killed += await killPubSub(s.stack.redis)
        mark(s, 'pub/sub killed')
        await trafficFlows(s, 'traffic after the kill', 20)
        await sleep(s.leaseMs / 2)
      }
      await expectNeverOverTheLimit(s)
      expect(killed).toBeGreaterThanOrEqual(4) // the fault was injected: at least one subscriber cut each time
    }, 90_000)
  },
)
