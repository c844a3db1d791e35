import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startReplicaStack, type ReplicaStack } from '../../support/stack.js'
import { changesIn, drive, judged, lastLimit, MEMBERSHIPS } from './drive.js'

/**
 * Three replicas (`node dist/main.js`) on one Redis learn one limit per key together (README "Learned
 * limits"): the sim keeps 2 for one organisation and 12 for another on a "–" endpoint; sluice starts
 * from 5. The learned value lives in Redis, so a replica started again starts from it. `npm test`
 * builds dist first; run `npm run build` before running this file alone.
 */
const CONTACTS = 'GET /accounts/{id}/contacts'
let stack: ReplicaStack

beforeAll(async () => {
  stack = await startReplicaStack({
    prefixName: 'learning', env: { SLUICE_REDIS_KEEP_PERMITS: 'false' },
    sim: {
      latencyMs: 15,
      hiddenLimits: {
        low: { [MEMBERSHIPS]: 2 },
        high: { [MEMBERSHIPS]: 12 },
        drop: { [MEMBERSHIPS]: 8 },
        roomy: { [CONTACTS]: 12 },
      },
    },
  })
}, 60_000)
afterAll(async () => {
  await stack?.close()
})

const urls = (): string[] => stack.replicas.map((r) => r.url)
const changes = (): ReturnType<typeof changesIn> => changesIn(stack.replicas.flatMap((r) => r.output().split('\n')))

describe('learned limits, three replicas on Redis', () => {
  it('converge on a hidden limit of 2 and of 12, shared by every replica', async () => {
    const first = await Promise.all([drive(urls(), 'low', 24, 12), drive(urls(), 'high', 24, 12)])
    stack.sim.reset()
    const second = await Promise.all([drive(urls(), 'low', 24, 12), drive(urls(), 'high', 24, 12)])
    expect([...first.flat(), ...second.flat()].filter((s) => s !== 200)).toEqual([])
    expect(lastLimit(changes(), 'low')).toBeGreaterThanOrEqual(2)
    expect(lastLimit(changes(), 'low')).toBeLessThanOrEqual(3)
    expect(lastLimit(changes(), 'high')).toBeGreaterThanOrEqual(10)
    expect(lastLimit(changes(), 'high')).toBeLessThanOrEqual(13)
    // the changes were made by more than one replica: one value, learned by all of them
    expect(
      new Set(stack.replicas.filter((r) => changesIn(r.output().split('\n')).length > 0).map((r) => r.pid)).size,
    ).toBeGreaterThan(1)
    expect(judged(stack.sim, 'low').share429).toBeLessThan(0.1)
    expect(judged(stack.sim, 'high').maxInProgress).toBeGreaterThanOrEqual(9)
    expect(judged(stack.sim, 'high').share429).toBeLessThan(0.1)
  })

  it('a replica started again starts from the learned value kept in Redis, not from 5', async () => {
    // every replica replaced: nothing is left in any process's memory
    for (let i = 0; i < stack.replicas.length; i++) await stack.restartReplica(i)
    stack.sim.reset()
    // 24 requests at once: from 5, three of them would be answered 429 straight away (5 sent, 2 allowed)
    const statuses = await drive(urls(), 'low', 24, 1)
    expect(statuses.filter((s) => s !== 200)).toEqual([])
    expect(stack.sim.stats().keys[`low ${MEMBERSHIPS}`]!.rejected429).toBeLessThanOrEqual(1)
  })

  it('follow a limit that drops mid-run (the API under load) down, and back up when it recovers', async () => {
    await drive(urls(), 'drop', 24, 10)
    expect(lastLimit(changes(), 'drop')).toBeGreaterThanOrEqual(7)
    stack.sim.setHiddenLimit('drop', MEMBERSHIPS, 3)
    await drive(urls(), 'drop', 24, 10)
    stack.sim.reset()
    const lowered = await drive(urls(), 'drop', 24, 10)
    expect(lowered.filter((s) => s !== 200)).toEqual([])
    expect(lastLimit(changes(), 'drop')).toBeGreaterThanOrEqual(3)
    expect(lastLimit(changes(), 'drop')).toBeLessThanOrEqual(4)
    expect(judged(stack.sim, 'drop').share429).toBeLessThan(0.1)
    stack.sim.setHiddenLimit('drop', MEMBERSHIPS, 8)
    await drive(urls(), 'drop', 24, 15)
    stack.sim.reset()
    await drive(urls(), 'drop', 24, 10)
    expect(judged(stack.sim, 'drop').maxInProgress).toBeGreaterThanOrEqual(6)
  })

  it('a published limit is a ceiling: the API allowing 12 on a limit-5 endpoint gets 5 at most', async () => {
    stack.sim.reset()
    const statuses = await drive(urls(), 'roomy', 24, 10, (n) => `/v2/accounts/${n}/contacts`)
    expect(statuses.filter((s) => s !== 200)).toEqual([])
    expect(judged(stack.sim, 'roomy', CONTACTS).maxAttempted).toBe(5)
    expect(changes().filter((c) => c.instance === 'roomy')).toEqual([])
  })
})
