import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { freePort, kill, spawnUntil } from './redis.js'
import type { TestCa } from './redis-tls.js'

// No vitest in here. A Redis as managed Redis runs it: a master and a replica, each with a password,
// watched by three Sentinels (quorum 2) that have a password of their own; in plain text, or TLS-only
// with a test CA (the certificate names `redis.test`). Failover is fast (down after 1 s).

const HOST = '127.0.0.1'
export const GROUP = 'mymaster'

export interface SentinelGroup {
  /** `host:port,…` of the three Sentinels */
  readonly sentinels: string
  readonly password: string
  readonly sentinelPassword: string
  /** the SLUICE_REDIS_* env of a proxy on this group (and NODE_EXTRA_CA_CERTS with TLS) */
  readonly env: Readonly<Record<string, string>>
  /** the master's port, as the Sentinels say now */
  masterPort(): Promise<number>
  /** a client of the server on `port` (the caller disconnects it) */
  client(port: number): Redis
  /** `SENTINEL FAILOVER`; resolves once the other server is master, the Sentinels say so, and the old one follows it */
  failover(): Promise<void>
  /** SIGKILLs the master; resolves once the Sentinels promoted the replica. Returns the dead one's port. */
  killMaster(): Promise<number>
  /** starts the server on `port` again, empty; resolves once it replicates from the master in place */
  rejoin(port: number): Promise<void>
  close(): Promise<void>
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

async function until(check: () => Promise<boolean>, what: string, boundMs = 30_000): Promise<void> {
  const end = Date.now() + boundMs
  for (;;) {
    try {
      if (await check()) return
    } catch {
      // not up yet
    }
    if (Date.now() > end) throw new Error(`sentinel group: timed out waiting for ${what}`)
    await sleep(50)
  }
}

function tlsLines(ca: TestCa | undefined, port: number): string[] {
  if (ca === undefined) return [`port ${port}`]
  return [
    'port 0',
    `tls-port ${port}`,
    `tls-cert-file ${ca.cert}`,
    `tls-key-file ${ca.key}`,
    `tls-ca-cert-file ${ca.ca}`,
    'tls-auth-clients no',
    'tls-replication yes',
  ]
}

export async function startSentinelGroup(o: { ca?: TestCa } = {}): Promise<SentinelGroup> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-sentinel-group-'))
  const password = 'group-master-pw'
  const sentinelPassword = 'group-sentinel-pw'
  const servers = new Map<number, ChildProcess | undefined>()
  const sentinels: ChildProcess[] = []
  const clients = new Set<Redis>()
  const client = (port: number, sentinel = false): Redis => {
    const c = new Redis({
      host: HOST,
      port,
      password: sentinel ? sentinelPassword : password,
      maxRetriesPerRequest: 1,
      lazyConnect: false,
      ...(o.ca ? { tls: { ca: readFileSync(o.ca.ca), servername: 'redis.test' } } : {}),
    })
    c.on('error', () => {})
    clients.add(c)
    return c
  }
  const startServer = async (port: number, replicaOf?: number): Promise<void> => {
    const conf = join(dir, `redis-${port}.conf`)
    const lines = [
      ...tlsLines(o.ca, port),
      `bind ${HOST}`,
      `dir ${dir}`,
      `dbfilename dump-${port}.rdb`,
      'save ""',
      'appendonly no',
      `requirepass ${password}`,
      `masterauth ${password}`,
      ...(replicaOf === undefined ? [] : [`replicaof ${HOST} ${replicaOf}`]),
    ]
    writeFileSync(conf, `${lines.join('\n')}\n`)
    servers.set(port, await spawnUntil([conf], port, 'Ready to accept connections'))
  }
  const role = async (port: number): Promise<string> => {
    const c = client(port)
    try {
      return String(((await c.call('ROLE')) as unknown[])[0])
    } finally {
      c.disconnect()
      clients.delete(c)
    }
  }
  const linkUp = async (port: number): Promise<boolean> => {
    const c = client(port)
    try {
      return (await c.info('replication')).includes('master_link_status:up')
    } finally {
      c.disconnect()
      clients.delete(c)
    }
  }
  const sentinelPorts: number[] = []
  const masterPort = async (): Promise<number> => {
    const c = client(sentinelPorts[0]!, true)
    try {
      const addr = (await c.call('SENTINEL', 'get-master-addr-by-name', GROUP)) as [string, string]
      return Number(addr[1])
    } finally {
      c.disconnect()
      clients.delete(c)
    }
  }
  const everySentinelSays = async (port: number): Promise<boolean> => {
    for (const s of sentinelPorts) {
      const c = client(s, true)
      try {
        const addr = (await c.call('SENTINEL', 'get-master-addr-by-name', GROUP)) as [string, string]
        if (Number(addr[1]) !== port) return false
      } finally {
        c.disconnect()
        clients.delete(c)
      }
    }
    return true
  }
  const close = async (): Promise<void> => {
    for (const c of clients) c.disconnect()
    for (const s of sentinels) await kill(s)
    for (const child of servers.values()) await kill(child)
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    const [mp, rp] = [await freePort(false), await freePort(false)]
    await startServer(mp)
    await startServer(rp, mp)
    await until(() => linkUp(rp), 'the replica in sync')
    for (let i = 0; i < 3; i++) {
      const port = await freePort(false)
      const conf = join(dir, `sentinel-${port}.conf`)
      const lines = [
        ...tlsLines(o.ca, port),
        `bind ${HOST}`,
        `dir ${dir}`,
        `requirepass ${sentinelPassword}`,
        `sentinel sentinel-pass ${sentinelPassword}`,
        `sentinel monitor ${GROUP} ${HOST} ${mp} 2`,
        `sentinel auth-pass ${GROUP} ${password}`,
        `sentinel down-after-milliseconds ${GROUP} 1000`,
        `sentinel failover-timeout ${GROUP} 4000`,
      ]
      writeFileSync(conf, `${lines.join('\n')}\n`)
      sentinels.push(await spawnUntil([conf, '--sentinel'], port, '+monitor master'))
      sentinelPorts.push(port)
    }
    // every Sentinel knows the other two and the replica before a failover is asked for
    await until(async () => {
      for (const s of sentinelPorts) {
        const c = client(s, true)
        try {
          const m = (await c.call('SENTINEL', 'master', GROUP)) as string[]
          const field = (name: string): string => m[m.indexOf(name) + 1] ?? ''
          if (field('num-other-sentinels') !== '2' || field('num-slaves') !== '1') return false
        } finally {
          c.disconnect()
          clients.delete(c)
        }
      }
      return true
    }, 'the Sentinels to know each other and the replica')
  } catch (err) {
    await close()
    throw err
  }
  const other = (port: number): number => [...servers.keys()].find((p) => p !== port)!
  return {
    sentinels: sentinelPorts.map((p) => `${HOST}:${p}`).join(','),
    password,
    sentinelPassword,
    env: {
      SLUICE_REDIS_TOPOLOGY: 'sentinel',
      SLUICE_REDIS_SENTINELS: sentinelPorts.map((p) => `${HOST}:${p}`).join(','),
      SLUICE_REDIS_SENTINEL_NAME: GROUP,
      SLUICE_REDIS_SENTINEL_PASSWORD: sentinelPassword,
      SLUICE_REDIS_URL: `${o.ca ? 'rediss' : 'redis'}://:${password}@ignored.invalid:1/0`,
      ...(o.ca ? { NODE_EXTRA_CA_CERTS: o.ca.ca, SLUICE_REDIS_TLS_SERVERNAME: 'redis.test' } : {}),
    },
    masterPort,
    client: (port) => client(port),
    async failover() {
      const old = await masterPort()
      const next = other(old)
      const c = client(sentinelPorts[0]!, true)
      try {
        await c.call('SENTINEL', 'FAILOVER', GROUP)
      } finally {
        c.disconnect()
        clients.delete(c)
      }
      await until(async () => (await role(next)) === 'master' && (await everySentinelSays(next)), 'the promotion')
      // Sentinel turns the old master into a replica (and cuts its clients) some seconds later: until
      // then clients still on it write there, and the new master's copy falls behind theirs
      await until(() => linkUp(old), 'the old master following the new one')
    },
    async killMaster() {
      const old = await masterPort()
      const next = other(old)
      await kill(servers.get(old))
      servers.set(old, undefined)
      await until(async () => (await role(next)) === 'master' && (await everySentinelSays(next)), 'the promotion')
      return old
    },
    async rejoin(port) {
      // as its operator would: a replica of the master in place (the Sentinels would make it one, later)
      await startServer(port, await masterPort())
      await until(() => linkUp(port), 'the old master back as a replica')
    },
    close,
  }
}
