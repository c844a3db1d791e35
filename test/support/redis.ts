import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'

/**
 * Real redis-server processes for tests, each on a free port of its own and keeping nothing on disk
 * (`--save "" --appendonly no`). Never the shared server on 6379. When SLUICE_TEST_REDIS_URL is set,
 * `startRedis` hands out that server instead and cannot stop it (`managed: false`): tests that stop or
 * restart Redis skip themselves then, and every test uses its own key prefix (`uniquePrefix`).
 */

export interface TestRedis {
  readonly host: string
  readonly port: number
  readonly url: string
  /** false when this is SLUICE_TEST_REDIS_URL's server: it cannot be stopped or restarted */
  readonly managed: boolean
  /** a new client to inspect the server (the caller quits it; `close` does too) */
  client(): Redis
  /**
   * stops the server: SIGKILL, like a crash, nothing kept (the next `start` is empty); with
   * `keepData`, `SHUTDOWN SAVE` first, so the next `start` loads what it had (a restart with persistence)
   */
  stop(options?: { keepData?: boolean }): Promise<void>
  /** starts it again on the same port: empty, or with the data a `stop({ keepData: true })` saved */
  start(): Promise<void>
  /** freezes the server (SIGSTOP): connections stay open, nothing is answered — a hung Redis */
  freeze(): void
  /** lets a frozen server go on (SIGCONT) */
  thaw(): void
  /** stops it for good and quits the clients made by `client` */
  close(): Promise<void>
}

export interface TestRedisCluster {
  /** `host:port,host:port,…` of the masters, for `redis.clusterNodes` */
  readonly clusterNodes: string
  readonly url: string
  readonly nodes: readonly TestRedis[]
  close(): Promise<void>
}

const HOST = '127.0.0.1'
const running = new Set<ChildProcess>()
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})

/** Holders and waiters of every semaphore under a key prefix, as Redis has them now. */
export async function leftInRedis(client: Redis, prefix: string): Promise<{ holders: number; queued: number }> {
  let holders = 0
  let queued = 0
  for (const k of await client.keys(`${prefix}:*:holders`)) holders += await client.zcard(k)
  for (const k of await client.keys(`${prefix}:*:queue`)) queued += await client.zcard(k)
  return { holders, queued }
}

/** A key prefix no other test uses (for a shared SLUICE_TEST_REDIS_URL server). */
export function uniquePrefix(name = 'test'): string {
  return `sluice-${name}-${randomBytes(4).toString('hex')}`
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, HOST, () => server.close(() => resolve(true)))
  })
}

/** A free port; with `bus`, port + 10000 (the cluster bus) is free too. */
export async function freePort(bus: boolean): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 25_000)
    if (port === 6379) continue
    if ((await portIsFree(port)) && (!bus || (await portIsFree(port + 10_000)))) return port
  }
  throw new Error('no free port for redis-server')
}

function spawnServer(port: number, dir: string, extra: readonly string[]): Promise<ChildProcess> {
  const args = ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir, ...extra]
  return spawnUntil(args, port, 'Ready to accept connections')
}

/** `redis-server` with these arguments, once its output shows `readyText`; killed when the test process exits. */
export function spawnUntil(args: readonly string[], port: number, readyText: string): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(child)
  child.once('exit', () => running.delete(child))
  return new Promise((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => fail(new Error(`redis-server on ${port} did not start:\n${output}`)), 10_000)
    const fail = (err: Error): void => {
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(err)
    }
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes(readyText)) {
        clearTimeout(timer)
        child.stdout.removeAllListeners('data')
        child.stdout.resume()
        resolve(child)
      }
    })
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.once('exit', (code) => fail(new Error(`redis-server on ${port} exited (${code}):\n${output}`)))
  })
}

export function kill(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    child.once('exit', () => resolve())
    child.kill('SIGKILL')
  })
}

async function startManaged(extra: readonly string[], bus: boolean): Promise<TestRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-'))
  let port = 0
  let child: ChildProcess | undefined
  for (let attempt = 0; ; attempt++) {
    port = await freePort(bus)
    try {
      child = await spawnServer(port, dir, extra)
      break
    } catch (err) {
      if (attempt >= 4) throw err // the port was taken between the check and the start: try another
    }
  }
  const clients = new Set<Redis>()
  return {
    host: HOST,
    port,
    url: `redis://${HOST}:${port}`,
    managed: true,
    client() {
      const client = new Redis({ host: HOST, port, lazyConnect: false, maxRetriesPerRequest: 1 })
      client.on('error', () => {})
      clients.add(client)
      return client
    },
    async stop(options: { keepData?: boolean } = {}) {
      if (options.keepData && child && child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit')
        child.kill('SIGCONT') // in case it was frozen
        const admin = new Redis({ host: HOST, port, maxRetriesPerRequest: 0, lazyConnect: true })
        admin.on('error', () => {})
        await admin.connect()
        await admin.call('SHUTDOWN', 'SAVE').catch(() => undefined) // the server closes the connection as it exits
        admin.disconnect()
        await exited
      } else {
        rmSync(join(dir, 'dump.rdb'), { force: true })
        await kill(child)
      }
      child = undefined
    },
    async start() {
      if (child) return
      child = await spawnServer(port, dir, extra)
    },
    freeze() {
      child?.kill('SIGSTOP')
    },
    thaw() {
      child?.kill('SIGCONT')
    },
    async close() {
      for (const client of clients) client.disconnect()
      clients.clear()
      await kill(child)
      child = undefined
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

function external(url: string): TestRedis {
  const parsed = new URL(url)
  const clients = new Set<Redis>()
  const unsupported = (): Promise<void> =>
    Promise.reject(new Error('SLUICE_TEST_REDIS_URL: this server cannot be stopped by tests'))
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 6379),
    url,
    managed: false,
    client() {
      const client = new Redis(url, { maxRetriesPerRequest: 1 })
      client.on('error', () => {})
      clients.add(client)
      return client
    },
    stop: unsupported,
    start: unsupported,
    freeze() {
      throw new Error('SLUICE_TEST_REDIS_URL: this server cannot be frozen by tests')
    },
    thaw() {
      throw new Error('SLUICE_TEST_REDIS_URL: this server cannot be frozen by tests')
    },
    close() {
      for (const client of clients) client.disconnect()
      return Promise.resolve()
    },
  }
}

/** A redis-server of the test's own (or SLUICE_TEST_REDIS_URL's server). */
export async function startRedis(options: { extraArgs?: readonly string[] } = {}): Promise<TestRedis> {
  const url = process.env.SLUICE_TEST_REDIS_URL
  if (url) return external(url)
  return startManaged(options.extraArgs ?? [], false)
}

/** A Redis Cluster of `masters` masters (no replicas) on loopback, slots spread by redis-cli. */
export async function startRedisCluster(masters = 3): Promise<TestRedisCluster> {
  const nodes: TestRedis[] = []
  try {
    for (let i = 0; i < masters; i++) {
      nodes.push(
        await startManaged(
          ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${i}.conf`, '--cluster-node-timeout', '2000'],
          true,
        ),
      )
    }
    const created = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => `${n.host}:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'],
      { encoding: 'utf8', timeout: 20_000 },
    )
    if (created.status !== 0)
      throw new Error(`redis-cli --cluster create failed:\n${created.stdout}\n${created.stderr}`)
    // Every node must agree the cluster is up before clients connect.
    const deadline = Date.now() + 15_000
    for (const node of nodes) {
      const client = node.client()
      for (;;) {
        const info = await client.cluster('INFO')
        if (info.includes('cluster_state:ok')) break
        if (Date.now() > deadline) throw new Error(`cluster not ok on ${node.port}:\n${info}`)
        await new Promise((r) => setTimeout(r, 100))
      }
      client.disconnect()
    }
  } catch (err) {
    await Promise.all(nodes.map((n) => n.close()))
    throw err
  }
  return {
    clusterNodes: nodes.map((n) => `${n.host}:${n.port}`).join(','),
    url: nodes[0]!.url,
    nodes,
    async close() {
      await Promise.all(nodes.map((n) => n.close()))
    },
  }
}

export interface TestRedisSentinel {
  /** `host:port` of the sentinel, for `redis.sentinels` */
  readonly sentinels: string
  /** the master group name, for `redis.sentinelName` */
  readonly name: string
  readonly master: TestRedis
  close(): Promise<void>
}

/** A master and one Sentinel watching it (quorum 1), both on free ports of their own. */
export async function startRedisSentinel(name = 'mymaster'): Promise<TestRedisSentinel> {
  const master = await startManaged([], false)
  const dir = mkdtempSync(join(tmpdir(), 'sluice-sentinel-'))
  let sentinel: ChildProcess | undefined
  let port = 0
  try {
    for (let attempt = 0; ; attempt++) {
      port = await freePort(false)
      const conf = join(dir, `sentinel-${port}.conf`)
      writeFileSync(
        conf,
        `port ${port}\nbind ${HOST}\ndir ${dir}\nsentinel monitor ${name} ${master.host} ${master.port} 1\n`,
      )
      try {
        sentinel = await spawnUntil([conf, '--sentinel'], port, '+monitor master')
        break
      } catch (err) {
        if (attempt >= 4) throw err
      }
    }
  } catch (err) {
    await master.close()
    throw err
  }
  return {
    sentinels: `${HOST}:${port}`,
    name,
    master,
    async close() {
      await kill(sentinel)
      await master.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
