import { afterAll, beforeAll } from 'vitest'
import type { ProxyProcess } from './process.js'
import type { TestRedis } from './redis.js'
import type { Sim } from './sim.js'
import { startReplicaStack, type ReplicaStack, type StackOptions } from './stack.js'
import { uniquePrefix } from './redis.js'

export interface RedisReplicas {
  readonly redis: TestRedis
  readonly sim: Sim
  readonly replicas: readonly ProxyProcess[]
  /** the key prefix the replicas share */
  readonly prefix: string
}

/**
 * Three proxy processes (`node dist/main.js`, built by `npm test`) sharing a real redis-server of
 * their own, in front of a sim (`startReplicaStack`); started before the file's tests and stopped
 * after them. Read the fields inside tests. `skip` leaves everything unstarted (e.g. when Redis
 * cannot be stopped).
 */
export function useRedisReplicas(o: {
  simLatencyMs: number
  prefixName: string
  env?: Record<string, string>
  skip?: boolean
}): RedisReplicas {
  let stack: ReplicaStack | undefined
  // the prefix is known before the stack starts (tests read it at collection time)
  const prefix = uniquePrefix(o.prefixName)
  beforeAll(async () => {
    if (o.skip) return
    const options: StackOptions = { sim: { latencyMs: o.simLatencyMs }, prefix, env: o.env }
    stack = await startReplicaStack(options)
  }, 60_000)
  afterAll(async () => {
    await stack?.close()
  })
  return {
    get redis() {
      return stack!.redis
    },
    get sim() {
      return stack!.sim
    },
    get replicas() {
      return stack?.replicas ?? []
    },
    prefix,
  }
}
