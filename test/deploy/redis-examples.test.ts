import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { spawnProxy } from '../support/process.js'
import { startRedisCluster, startRedisSentinel } from '../support/redis.js'
import { EXAMPLES_DIR, readYamlFile, type Tree } from './chart.js'
import { envOf, podOf, settingsOf, sluiceIn } from './pod.js'
import { canRender, renderOk } from './render.js'
import { onLoopback, reachesMode } from './running.js'
import { has, needs } from '../support/tools.js'

/**
 * examples/redis-sentinel.yaml and examples/redis-cluster.yaml, against a real Sentinel and a real
 * Cluster on loopback: sluice started with the rendered container's env and settings file, only the
 * in-cluster addresses swapped for local ones through env vars (which override the settings file),
 * reaches the `redis` limiter mode. So the shape of each example (topology, names) is one sluice uses.
 */

const hasRedis = has('redis-server')

function renderedExample(file: string) {
  const values = readYamlFile(join(EXAMPLES_DIR, file)) as Tree
  const { manifests } = renderOk(values)
  const { spec } = podOf(manifests.find((m) => m.kind === 'Deployment')!)
  const container = sluiceIn(spec)
  return { settings: settingsOf(container, manifests, spec), env: envOf(container, manifests, spec) }
}

describe.skipIf(!canRender || !hasRedis)(
  `the Redis examples against real servers ${needs('go + sprig', 'redis-server')}`,
  () => {
    const stops: (() => Promise<unknown>)[] = []
    afterAll(async () => {
      for (const stop of stops.reverse()) await stop()
    })

    it("redis-sentinel.yaml: sluice finds the master through a Sentinel watching the example's master group", async () => {
      const { settings, env } = renderedExample('redis-sentinel.yaml')
      expect(settings.redis).toMatchObject({ topology: 'sentinel', sentinelName: 'mymaster' })
      const sentinel = await startRedisSentinel(settings.redis.sentinelName)
      stops.push(() => sentinel.close())
      // The URL's host is ignored with Sentinel (the master comes from the sentinels); it still names the database.
      const proxy = await spawnProxy(
        onLoopback(env, {
          SLUICE_REDIS_URL: 'redis://ignored-with-sentinel:6379/0',
          SLUICE_REDIS_SENTINELS: sentinel.sentinels,
        }),
      )
      stops.push(() => proxy.stop('SIGKILL'))
      expect(await reachesMode(proxy, 'redis'), proxy.output()).toBe(true)
    })

    it('redis-cluster.yaml: sluice reaches a three-master Cluster through the seed nodes', async () => {
      const { settings, env } = renderedExample('redis-cluster.yaml')
      expect(settings.redis.topology).toBe('cluster')
      const cluster = await startRedisCluster(3)
      stops.push(() => cluster.close())
      const proxy = await spawnProxy(
        onLoopback(env, { SLUICE_REDIS_URL: cluster.url, SLUICE_REDIS_CLUSTER_NODES: cluster.clusterNodes }),
      )
      stops.push(() => proxy.stop('SIGKILL'))
      expect(await reachesMode(proxy, 'redis'), proxy.output()).toBe(true)
    })
  },
)
