import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Cluster } from 'ioredis'
import type { Permit, PermitKey } from '../../../src/limiter/types.js'
import { startRedisCluster, type TestRedisCluster } from '../../support/redis.js'
import { closeAll, eventually, opts, redisLimiter, sleep, testSettings } from './helpers.js'
import { needs } from '../../support/tools.js'

let cluster: TestRedisCluster
beforeAll(async () => {
  cluster = await startRedisCluster(3)
}, 60_000)
afterAll(async () => {
  await cluster?.close()
})

describe.skipIf(process.env.SLUICE_TEST_REDIS_URL)(
  `redis limiter on a Redis Cluster of three masters ${needs('redis-server')}`,
  () => {
    it('limits, queues in order and hands off across replicas, with semaphores spread over the nodes', async () => {
      const settings = testSettings(cluster.url, {
        topology: 'cluster',
        clusterNodes: cluster.clusterNodes,
        leaseMs: 3_000,
      })
      const a = await redisLimiter(settings)
      const b = await redisLimiter(settings)
      expect(a.mode()).toBe('redis')
      expect(b.mode()).toBe('redis')

      const keys: PermitKey[] = Array.from({ length: 12 }, (_, i) => ({
        instance: `org${i}`,
        endpoint: 'POST /accounts/search',
      }))
      let holding = new Map<string, number>()
      let maxHolding = 0
      const order = new Map<string, number[]>()
      await Promise.all(
        keys.map(async (k) => {
          const first = await a.acquire(k, opts(1))
          const seen: number[] = []
          order.set(k.instance, seen)
          const waits: Promise<Permit>[] = []
          for (let i = 0; i < 4; i++) {
            waits.push(
              (i % 2 ? a : b).acquire(k, opts(1)).then((p) => {
                seen.push(i)
                const n = (holding.get(k.instance) ?? 0) + 1
                holding.set(k.instance, n)
                maxHolding = Math.max(maxHolding, n)
                return p
              }),
            )
            await eventually(
              async () => (await a.status()).keys.find((s) => s.instance === k.instance)?.queued === i + 1,
              5_000,
              'queued',
            )
          }
          first.release()
          for (const w of waits) {
            const p = await w
            await sleep(2)
            holding.set(k.instance, holding.get(k.instance)! - 1)
            p.release()
          }
        }),
      )
      for (const k of keys) expect(order.get(k.instance)).toEqual([0, 1, 2, 3])
      expect(maxHolding).toBe(1)

      // the semaphores' keys live on more than one master: the hash tags spread them, each whole on one node
      const inspect = new Cluster(
        cluster.clusterNodes.split(',').map((hp) => ({ host: hp.split(':')[0]!, port: Number(hp.split(':')[1]) })),
      )
      inspect.on('error', () => {})
      await new Promise((resolve) => inspect.once('ready', resolve))
      const perNode = await Promise.all(
        inspect.nodes('master').map((node) => node.keys(`${settings.keyPrefix}:*:meta`)),
      )
      expect(perNode.filter((list) => list.length > 0).length).toBeGreaterThan(1)
      await eventually(async () => (await a.status()).keys.length === 0, 5_000, 'nothing held or queued')
      inspect.disconnect()
      holding = new Map()
      await closeAll([a, b])
    })
  },
)
