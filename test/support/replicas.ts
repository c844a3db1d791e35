import { afterAll, beforeAll } from 'vitest'
import { spawnProxy, type ProxyProcess } from './process.js'
import { startRedis, uniquePrefix, type TestRedis } from './redis.js'
import { startSim, type Sim } from './sim.js'

export interface RedisReplicas {
  readonly redis: TestRedis
  readonly sim: Sim
  readonly replicas: readonly ProxyProcess[]
  /** the key prefix the replicas share */
  readonly prefix: string
}

/**
 * Three proxy processes (`node dist/main.js`, built by `npm test`) sharing a real redis-server of
 * their own, in front of a sim; started before the file's tests and stopped after them. Read the
 * fields inside tests. `skip` leaves everything unstarted (e.g. when Redis cannot be stopped).
 */
export function useRedisReplicas(o: { simLatencyMs: number; prefixName: string; env?: Record<string, string>; skip?: boolean }): RedisReplicas {
  let redis: TestRedis | undefined
  let sim: Sim | undefined
  let replicas: ProxyProcess[] = []
  const prefix = uniquePrefix(o.prefixName)
  beforeAll(async () => {
    if (o.skip) return
    redis = await startRedis()
    sim = await startSim({ latencyMs: o.simLatencyMs })
    const env = {
      SLUICE_UPSTREAM: sim.apiUrl,
      SLUICE_REDIS_URL: redis.url,
      SLUICE_REDIS_KEY_PREFIX: prefix,
      SLUICE_REQUEST_LOG: 'false',
      ...o.env,
    }
    replicas = await Promise.all([1, 2, 3].map(() => spawnProxy(env)))
  }, 60_000)
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()))
    await sim?.close()
    await redis?.close()
  })
  return {
    get redis() {
      return redis!
    },
    get sim() {
      return sim!
    },
    get replicas() {
      return replicas
    },
    prefix,
  }
}
