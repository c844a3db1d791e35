import { describe, expect, it } from 'vitest'
import {
  OUTAGE_LEASE_MS,
  judgeFromOneLeaseAfter,
  everyReplicaIn,
  expectNeverOverTheLimit,
  modes,
  mark,
  sleep,
  startScenario,
  trafficFlows,
} from './scenario.js'

/*
 * The network to Redis misbehaves (a TCP proxy of the test's own between the replicas and Redis).
 * A delay below `redis.commandTimeoutMs` is only slow: every replica stays on Redis and never goes
 * over. A partition longer than it (every byte held, then delivered) sends the replicas to the
 * fallback and back; connections reset send them there at once. Those two are judged, like a
 * Redis outage, from one lease after the network is whole again.
 */
// (well above what a busy test machine takes to answer, so only the partition sends the replicas away)
const COMMAND_TIMEOUT_MS = 1_000

describe('a slow, partitioned or reset network between the replicas and Redis', () => {
  it('a delay below the command timeout: the replicas stay on Redis, never over the limit', async () => {
    // (5 s: 25 times the longest delay, so that a CPU-starved test machine — the TCP proxy runs in
    // the test's own process — is not taken for a down Redis)
    const s = await startScenario({ viaTcpProxy: true, env: { SLUICE_REDIS_COMMAND_TIMEOUT_MS: '5000' } })
    const tcp = s.stack.tcp!
    const seen = new Set<string>()
    for (const ms of [50, 200, 150]) {
      tcp.delay(ms)
      mark(s, `network delay ${ms} ms each way`)
      await trafficFlows(s, `traffic with ${ms} ms each way`, 20)
      await sleep(s.leaseMs)
      for (const m of await modes(s)) seen.add(m)
    }
    tcp.delay(0)
    await expectNeverOverTheLimit(s)
    expect([...seen]).toEqual(['redis'])
  }, 90_000)

  it('a partition longer than the command timeout, then connections reset: fallback and back, never over one lease after', async () => {
    const s = await startScenario({
      leaseMs: OUTAGE_LEASE_MS,
      viaTcpProxy: true,
      env: { SLUICE_REDIS_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS) },
    })
    const tcp = s.stack.tcp!
    for (let round = 0; round < 2; round++) {
      let downAt = mark(s, 'network held')
      tcp.hold()
      await everyReplicaIn(s, 'local')
      await sleep(s.leaseMs)
      tcp.release()
      let backAt = mark(s, 'network released')
      judgeFromOneLeaseAfter(s, downAt, backAt)
      await everyReplicaIn(s, 'redis')
      await trafficFlows(s, 'traffic through Redis again', 30)

      downAt = backAt = mark(s, 'connections reset')
      tcp.cut()
      judgeFromOneLeaseAfter(s, downAt, backAt)
      await everyReplicaIn(s, 'redis')
      await trafficFlows(s, 'traffic after the reset', 30)
      await sleep(s.leaseMs)
    }
    await expectNeverOverTheLimit(s)
  }, 90_000)
})
