import { describe, it } from 'vitest'
import { expectNeverOverTheLimit, mark, sleep, startScenario, trafficFlows } from './scenario.js'

/*
 * A replica killed (SIGKILL: OOM killer, node lost) while it holds permits and has waiters: its
 * leases run out within one lease and its waiters are dropped once its liveness runs out, so the
 * others go on (docs/redis-limiter.md, "Failure modes"); a like replica started in its place joins.
 * Its own clients lose their requests with it; every other request is answered.
 */
describe('a replica killed while it holds permits and has waiters, then started again', () => {
  it('never over the limit, the others answer every request, nothing left behind', async () => {
    const s = await startScenario()
    for (const victim of [0, 2]) {
      await trafficFlows(s, 'the victim busy')
      const old = s.stack.replicas[victim]!
      s.loops.replicaKilled(old.pid)
      mark(s, `replica ${victim} killed`)
      await s.stack.restartReplica(victim)
      mark(s, `replica ${victim} started again`)
      await trafficFlows(s, 'traffic with the new replica', 60)
      await sleep(s.leaseMs)
    }
    await expectNeverOverTheLimit(s)
  }, 90_000)
})
