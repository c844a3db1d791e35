import { describe, expect, it } from 'vitest'
import { send, until } from '../../support/http.js'
import type { ProxyProcess } from '../../support/process.js'
import { basicAuth } from '../../support/sim.js'
import { expectNeverOverTheLimit, mark, sleep, startScenario, trafficFlows, type Scenario } from './scenario.js'
import type { Route } from '../../support/load.js'

/*
 * A replica stalls (SIGSTOP: a GC pause, a CPU-starved pod) longer than a lease while it holds
 * permits and has waiters. On waking, every grant message, acquire reply and timer that fired
 * meanwhile is stale: its leases ran out and their slots went to other replicas. Nothing stale may
 * start a request (docs/redis-limiter.md, "Failure modes").
 */

let seq = 0

/**
 * Sends one slow request per route through `replica` and waits until the sim has let each in: the
 * replica holds a permit of each key for `holdMs` from then on. Resolves with the answers to come.
 */
async function holdPermits(s: Scenario, replica: ProxyProcess, holdMs: number): Promise<Promise<number>[]> {
  const tags = s.routes.map(() => `hold-${++seq}`)
  const answers = s.routes.map((r: Route, i) =>
    send(replica.url, r.path, {
      method: r.method,
      headers: { authorization: basicAuth(r.instance), 'x-sim-delay-ms': String(holdMs), 'x-test-seq': tags[i]! },
      body: r.method === 'POST' ? '{}' : undefined,
    }).then((a) => a.status),
  )
  await until(
    () => {
      const admitted = new Set(
        s.stack.sim
          .stats()
          .arrivals.filter((a) => a.outcome === 'admitted' && a.seq !== null)
          .map((a) => a.seq),
      )
      return tags.every((t) => admitted.has(t))
    },
    'the replica holds a permit of each key',
    20_000,
  )
  return answers
}

async function freezeHolding(s: Scenario, victim: number, frozenMs: number): Promise<Promise<number>[]> {
  const replica = s.stack.replicas[victim]!
  // the loops keep every replica's queue busy: the victim has waiters of both keys all along
  const held = await holdPermits(s, replica, 300)
  replica.freeze()
  mark(s, `replica ${victim} frozen`)
  await sleep(frozenMs)
  replica.thaw()
  mark(s, `replica ${victim} thawed`)
  await trafficFlows(s, 'traffic after the thaw')
  return held
}

describe('a replica frozen longer than its lease, holding permits, with waiters', () => {
  it("the issue's reproduction: 3 replicas, 30 loops on org 1001's search (limit 1) and donations (limit 5), one frozen 9 s with a 5 s lease", async () => {
    const s = await startScenario({ leaseMs: 5_000 })
    const held = await freezeHolding(s, 1, 9_000)
    await trafficFlows(s, 'traffic after the thaw', 60)
    await expectNeverOverTheLimit(s)
    await expectAllOk(held)
  }, 90_000)

  it('frozen for 1, 2, 3 and 1.5 leases, each replica in turn', async () => {
    const s = await startScenario()
    const held: Promise<number>[] = []
    for (const [victim, leases] of [
      [0, 1],
      [1, 2],
      [2, 3],
      [0, 1.5],
    ] as const) {
      held.push(...(await freezeHolding(s, victim, leases * s.leaseMs)))
    }
    await expectNeverOverTheLimit(s)
    await expectAllOk(held)
  }, 90_000)
})

async function expectAllOk(answers: Promise<number>[]): Promise<void> {
  expect(await Promise.all(answers)).toEqual(answers.map(() => 200))
}
