import { spawnProxy, type ProxyProcess } from './process.js'
import { startRedis, uniquePrefix, type TestRedis } from './redis.js'
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js'
import { startSim, type Sim, type SimOptions } from '../../src/sim/index.js'

// No vitest in here: `npm run soak` starts the same stack outside the test runner.

/** How long a replica may take to start: a bound for a broken start on a busy machine, not a figure. */
const START_BOUND_MS = 60_000

export interface StackOptions {
  /** how many proxy processes; default 3 */
  readonly replicas?: number
  readonly sim?: Partial<SimOptions>
  /** extra SLUICE_* env of every replica (e.g. the lease, the fallback) */
  readonly env?: Record<string, string>
  /** the key prefix (default: a unique one named `prefixName`) */
  readonly prefix?: string
  readonly prefixName?: string
  /** the replicas reach Redis through a TCP proxy the test can slow down, hold or cut */
  readonly viaTcpProxy?: boolean
}

/**
 * Proxy processes (`node dist/main.js`, built by `npm test`) sharing a redis-server of their own, in
 * front of a sim — the system under test of the fault tests and of `npm run soak`. `replicas` is a
 * live array: `restartReplica` puts the new process in the old one's place (on new ports).
 */
export interface ReplicaStack {
  readonly redis: TestRedis
  readonly sim: Sim
  readonly tcp: TcpProxy | undefined
  readonly replicas: ProxyProcess[]
  readonly prefix: string
  /** the env every replica was started with */
  readonly env: Readonly<Record<string, string>>
  /** SIGKILLs replica `i` (frozen or not) and starts a like one in its place; resolves once it listens */
  restartReplica(i: number): Promise<ProxyProcess>
  close(): Promise<void>
}

export async function startReplicaStack(o: StackOptions = {}): Promise<ReplicaStack> {
  const redis = await startRedis()
  let tcp: TcpProxy | undefined
  let sim: Sim | undefined
  const replicas: ProxyProcess[] = []
  const prefix = o.prefix ?? uniquePrefix(o.prefixName ?? 'stack')
  const close = async (): Promise<void> => {
    await Promise.all(replicas.map((r) => r.stop('SIGKILL')))
    await sim?.close()
    await tcp?.close()
    await redis.close()
  }
  try {
    if (o.viaTcpProxy) tcp = await startTcpProxy(redis)
    sim = await startSim(o.sim)
    const env: Record<string, string> = {
      SLUICE_UPSTREAM: sim.apiUrl,
      SLUICE_REDIS_URL: tcp?.url ?? redis.url,
      SLUICE_REDIS_KEY_PREFIX: prefix,
      SLUICE_REQUEST_LOG: 'false',
      ...o.env,
    }
    const started = await Promise.allSettled(
      Array.from({ length: o.replicas ?? 3 }, () => spawnProxy(env, START_BOUND_MS)),
    )
    // the ones that did start are stopped by `close` below when another did not
    for (const r of started) if (r.status === 'fulfilled') replicas.push(r.value)
    const failed = started.find((r) => r.status === 'rejected')
    if (failed) throw failed.reason
    return {
      redis,
      sim,
      tcp,
      replicas,
      prefix,
      env,
      async restartReplica(i) {
        await replicas[i]!.stop('SIGKILL')
        const next = await spawnProxy(env, START_BOUND_MS)
        replicas[i] = next
        return next
      },
      close,
    }
  } catch (err) {
    await close()
    throw err
  }
}
