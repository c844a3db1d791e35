/**
 * One of the three contending processes of the Redis limiter benchmark. Runs `workers` loops of
 * acquire → 20 ms of simulated upstream work → release with one library, from a common start time,
 * and reports every grant and release (system-wide monotonic clock, so processes compare) plus the
 * Redis commands it sent. Config: SLUICE_BENCH_CONTENDER (JSON); driven over IPC by ./index.ts.
 */
import Bottleneck from 'bottleneck'
import { Redis } from 'ioredis'
import { Semaphore } from 'redis-semaphore'
import { createRedisLimiter } from '../../src/limiter/redis/index.js'
import { redisSettingsSchema } from '../../src/limiter/redis/settings.js'

export type Library = 'sluice' | 'redis-semaphore' | 'bottleneck'

export interface ContenderConfig {
  readonly library: Library
  readonly url: string
  readonly key: string
  readonly limit: number
  readonly workers: number
  readonly holdMs: number
}

export interface ContenderReport {
  /** [grant, release] times in ms on the monotonic clock */
  readonly holds: [number, number][]
  /** for every grant, ms from asking for the permit to getting it */
  readonly waits: number[]
  /** commands this process sent to Redis while measuring (every ioredis client in it) */
  readonly commandsSent: number
  readonly errors: number
}

/** The system-wide monotonic clock (CLOCK_MONOTONIC): comparable between processes of one machine. */
const now = (): number => Number(process.hrtime.bigint()) / 1e6
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

// Every command any ioredis client in this process sends (bottleneck's and redis-semaphore's too)
// goes through Redis.prototype.sendCommand: count them there, the same way for all three.
let commandsSent = 0
const proto = Redis.prototype as unknown as { sendCommand: (...args: unknown[]) => unknown }
const sendCommand = proto.sendCommand
proto.sendCommand = function (this: Redis, ...args: unknown[]) {
  commandsSent++
  return sendCommand.apply(this, args)
}

type Hold = () => Promise<() => Promise<void> | void>

async function setUp(config: ContenderConfig): Promise<{ hold: Hold; close: () => Promise<void> }> {
  const { url, key, limit } = config
  if (config.library === 'sluice') {
    const settings = redisSettingsSchema.parse({ url, keyPrefix: key })
    const quiet = { info: () => {}, warn: () => {}, error: () => {} }
    const limiter = await createRedisLimiter(settings, { log: quiet, replicaId: 'bench' })
    const permitKey = { instance: 'bench', endpoint: 'POST /accounts/search' }
    return {
      hold: async () => {
        const permit = await limiter.acquire(permitKey, { limit, maxQueue: 100_000, deadline: Date.now() + 600_000 })
        return () => permit.release()
      },
      close: () => limiter.close(),
    }
  }
  if (config.library === 'redis-semaphore') {
    const client = new Redis(url)
    return {
      hold: async () => {
        const semaphore = new Semaphore(client, key, limit) // default options, as documented
        await semaphore.acquire()
        return () => semaphore.release()
      },
      close: async () => {
        await client.quit()
      },
    }
  }
  const client = new Redis(url)
  const bottleneck = new Bottleneck({
    id: key,
    maxConcurrent: limit,
    datastore: 'ioredis',
    clearDatastore: false,
    connection: new Bottleneck.IORedisConnection({ client }),
  })
  await bottleneck.ready()
  return {
    // bottleneck runs the job itself: the grant is the job's start, the release its end
    hold: () =>
      new Promise((granted, failed) => {
        let done: () => void = () => {}
        bottleneck
          .schedule({ expiration: 600_000 }, () => {
            granted(() => done())
            return new Promise<void>((resolve) => (done = resolve))
          })
          .catch(failed)
      }),
    close: async () => {
      await bottleneck.disconnect(true)
    },
  }
}

async function run(config: ContenderConfig, durationMs: number): Promise<ContenderReport> {
  const { hold, close } = await setUp(config)
  const holds: [number, number][] = []
  const waits: number[] = []
  let errors = 0
  // warm up: scripts loaded, connections open
  const warm = await hold()
  await warm()
  process.send!({ ready: true })
  const go = await new Promise<number>((resolve) => process.once('message', (m: { go: number }) => resolve(m.go)))
  while (now() < go) await sleep(1)
  commandsSent = 0
  const end = go + durationMs
  await Promise.all(
    Array.from({ length: config.workers }, async () => {
      while (now() < end) {
        let release
        const asked = now()
        try {
          release = await hold()
        } catch {
          errors++ // e.g. redis-semaphore's acquire timeout
          continue
        }
        const granted = now()
        waits.push(granted - asked)
        await sleep(config.holdMs)
        const released = now()
        holds.push([granted, released])
        await release()
      }
    }),
  )
  const report = { holds, waits, commandsSent, errors }
  await close()
  return report
}

const config = JSON.parse(process.env.SLUICE_BENCH_CONTENDER ?? '{}') as ContenderConfig & { durationMs: number }
run(config, config.durationMs).then(
  (report) => {
    process.send!({ report }, () => process.exit(0))
  },
  (err: unknown) => {
    process.stderr.write(`contender failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exit(1)
  },
)
