import { describe, expect, it, onTestFinished } from 'vitest'
import { adminJson, startProxy } from '../../support/proxy.js'
import { send, until } from '../../support/http.js'
import { basicAuth, withSim } from '../../support/sim.js'
import { uniquePrefix } from '../../support/redis.js'
import { useRedis } from '../../support/use-redis.js'
import { heardByAll } from '../../limiter/redis/helpers.js'
import { localShare } from '../../../src/limiter/redis/local-share.js'

const redis = useRedis({ each: true })
const ENDPOINT = 'GET /accounts/{id}/contacts'
const RATE = { requests: 4, windowMs: 1000 }

async function twoReplicas(sim: { apiUrl: string }, extra: Record<string, unknown> = {}) {
  const keyPrefix = uniquePrefix('rates')
  const shared = {
    upstream: sim.apiUrl,
    requestLog: false,
    limits: { rates: { [ENDPOINT]: RATE }, rateMarginMs: 250 },
    redis: {
      url: redis.url,
      keyPrefix,
      leaseMs: 1000,
      fallback: 'local',
      commandTimeoutMs: 2000,
    },
    ...extra,
  }
  const replicas = [await startProxy(shared), await startProxy(shared)]
  onTestFinished(() => Promise.all(replicas.map((r) => r.close())).then(() => undefined))
  // each divides by the replicas it knows of when Redis goes away (README "Redis"): both know of both first
  for (const r of replicas)
    await until(
      async () => (await adminJson<{ details: { replicas?: number } }>(r, '/status')).details.replicas === 2,
      'both replicas counted',
    )
  await heardByAll(redis.client(), keyPrefix, 2) // and each takes its slots in the `local` fallback
  return replicas
}

/**
 * An organisation whose rate slots in the `local` fallback split between the two replicas as `wanted`
 * says (replica 0's count of the 4): each slot goes to the replica a rendezvous hash of (key, slot,
 * replica id) ranks first, and ids are random, so a fixed name would draw the split anew each run
 * (docs/redis-limiter.md, "Failure modes": one replica owns all of one key in eight).
 */
async function orgWithSlots(replicas: { adminUrl: string }[], wanted: (ownedBy0: number) => boolean): Promise<string> {
  const ids: string[] = []
  for (const r of replicas)
    ids.push((await adminJson<{ details: { replicaId: string } }>(r, '/status')).details.replicaId)
  const basis = { live: ids, claims: true }
  for (let i = 0; ; i++) {
    const key = { instance: `org${i}`, endpoint: ENDPOINT }
    if (wanted(localShare(RATE.requests, key, ids[0]!, basis))) return key.instance
  }
}

const get = (proxy: { url: string }, i: number, org = 'org1') =>
  send(proxy.url, `/v2/accounts/${i}/contacts`, { headers: { authorization: basicAuth(org) } })
type Answer = Awaited<ReturnType<typeof get>>

/** 8 requests split between the two replicas, numbered from `from` */
const eight = (replicas: { url: string }[], from: number, org = 'org1'): Promise<Answer>[] =>
  Array.from({ length: 8 }, (_, i) => get(replicas[i % 2]!, from + i, org))

/** 8 requests under way, then Redis stopped 400 ms in; their answers still to come (wrapped, not awaited) */
async function eightThenRedisStopped(replicas: { url: string }[], org: string): Promise<{ first: Promise<Answer[]> }> {
  const first = Promise.all(eight(replicas, 0, org))
  await new Promise((r) => setTimeout(r, 400))
  await redis.stop()
  return { first }
}

/** every request answered 200, and the API never saw more than the rate in a window */
function expectServedWithinRate(
  answers: Answer[],
  sim: { rateStats(): Record<string, { overRate: number; maxInWindow: number }> },
  org: string,
): void {
  expect(answers.map((a) => a.status)).toEqual(Array(16).fill(200))
  const stats = sim.rateStats()[`${org} ${ENDPOINT}`]!
  expect(stats.overRate).toBe(0)
  expect(stats.maxInWindow).toBeLessThanOrEqual(4)
}

describe('a rate shared by every replica through Redis', () => {
  it('two replicas, 16 requests split between them: the API never sees more than N per window', async () => {
    const sim = await withSim({ rates: { [ENDPOINT]: RATE }, latencyMs: 5 })
    const replicas = await twoReplicas(sim)
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => get(replicas[i % 2]!, i)))
    expect(answers.map((a) => a.status)).toEqual(Array(16).fill(200))
    expect(sim.rateStats()[`org1 ${ENDPOINT}`]).toEqual({ overRate: 0, maxInWindow: 4, admitted: 16 })
  })

  it('Redis stopped mid-run: each replica keeps its share (fallback local), nothing over the rate', async () => {
    if (!redis.managed) return
    const sim = await withSim({ rates: { [ENDPOINT]: RATE }, latencyMs: 5 })
    const replicas = await twoReplicas(sim)
    const org = await orgWithSlots(replicas, (n) => n > 0 && n < RATE.requests) // each replica owns a slot
    const { first } = await eightThenRedisStopped(replicas, org)
    const answers = [...(await first), ...(await Promise.all(eight(replicas, 8, org)))]
    expectServedWithinRate(answers, sim, org)
  })

  it('Redis stopped mid-run, every slot of the key on one replica: its peer sends nothing until Redis is back, then serves every request', async () => {
    if (!redis.managed) return
    const sim = await withSim({ rates: { [ENDPOINT]: RATE }, latencyMs: 5 })
    const replicas = await twoReplicas(sim)
    const org = await orgWithSlots(replicas, (n) => n === RATE.requests) // replica 1's share is 0
    const { first } = await eightThenRedisStopped(replicas, org)
    const later = eight(replicas, 8, org).map((p) => p.then((answer) => ({ ...answer, at: Date.now() })))
    await new Promise((r) => setTimeout(r, 4_000))
    const back = Date.now()
    await redis.start()
    const answers = [...(await first), ...(await Promise.all(later))]
    // replica 1's requests after the stop waited for Redis (documented: a share of 0 queues), none refused
    const peer = (await Promise.all(later)).filter((_, i) => i % 2 === 1)
    expect(peer.every((a) => a.at >= back)).toBe(true)
    expectServedWithinRate(answers, sim, org)
  })

  it('Redis back after the fallback, empty: the starts reserved meanwhile are not forgotten, nothing over the rate', async () => {
    if (!redis.managed) return
    const sim = await withSim({ rates: { [ENDPOINT]: RATE }, latencyMs: 5 })
    const replicas = await twoReplicas(sim)
    await redis.stop()
    const during = Promise.all(eight(replicas, 0))
    await new Promise((r) => setTimeout(r, 300))
    await redis.start()
    const after = Promise.all(eight(replicas, 8))
    expectServedWithinRate([...(await during), ...(await after)], sim, 'org1')
  })
})
