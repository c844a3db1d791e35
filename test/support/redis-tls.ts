import { spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, kill, spawnUntil } from './redis.js'

/**
 * Redis servers that speak TLS only (`--port 0 --tls-port …`), with a certificate of a test CA made
 * by openssl in a temp dir: a master and a Sentinel that both require passwords and know an ACL user,
 * and a Cluster whose nodes announce a host name. Clients trust the CA through NODE_EXTRA_CA_CERTS
 * (`ca`), as a pod does with the chart's examples/redis-tls.yaml.
 */

const HOST = '127.0.0.1'

export const hasOpenssl = spawnSync('openssl', ['version']).status === 0
/**
 * Whether this redis-server was built with TLS: without certificates a TLS build stops at once with
 * "Failed to configure TLS", a build without TLS with "Bad directive" for `tls-port`.
 */
export const hasRedisTls = ((): boolean => {
  const r = spawnSync('redis-server', ['--port', '0', '--tls-port', '1', '--bind', HOST], {
    encoding: 'utf8',
    timeout: 5_000,
  })
  return /TLS/.test(`${r.stdout}${r.stderr}`) && !/Bad directive/i.test(`${r.stdout}${r.stderr}`)
})()

function openssl(dir: string, ...args: string[]): void {
  const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8', timeout: 30_000 })
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}:\n${r.stderr}`)
}

export interface TestCa {
  readonly dir: string
  /** the CA's certificate, for NODE_EXTRA_CA_CERTS */
  readonly ca: string
  /** the servers' certificate and key, naming only `names` (subjectAltName) */
  readonly cert: string
  readonly key: string
  close(): void
}

/** A CA and a server certificate signed by it for `names` (e.g. `DNS:redis.test`), in a temp dir. */
export function makeTestCa(names: readonly string[]): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-tls-'))
  openssl(
    dir,
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '1',
    '-subj',
    '/CN=sluice test CA',
  )
  openssl(
    dir,
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'redis.key',
    '-out',
    'redis.csr',
    '-subj',
    '/CN=sluice test redis',
  )
  writeFileSync(join(dir, 'san.ext'), `subjectAltName=${names.join(',')}\n`)
  openssl(
    dir,
    'x509',
    '-req',
    '-in',
    'redis.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'redis.crt',
    '-days',
    '1',
    '-extfile',
    'san.ext',
  )
  return {
    dir,
    ca: join(dir, 'ca.crt'),
    cert: join(dir, 'redis.crt'),
    key: join(dir, 'redis.key'),
    close: () => rmSync(dir, { recursive: true, force: true }),
  }
}

/** The TLS directives every server here shares: TLS port only, clients need no certificate. */
const tlsArgs = (ca: TestCa, port: number): string[] => [
  '--port',
  '0',
  '--tls-port',
  String(port),
  '--bind',
  HOST,
  '--tls-cert-file',
  ca.cert,
  '--tls-key-file',
  ca.key,
  '--tls-ca-cert-file',
  ca.ca,
  '--tls-auth-clients',
  'no',
  '--save',
  '',
  '--appendonly',
  'no',
]

/** Starts a server on a free port, trying another port when the one found was taken meanwhile. */
async function onFreePort(
  bus: boolean,
  start: (port: number) => Promise<ChildProcess>,
): Promise<{ port: number; child: ChildProcess }> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort(bus)
    try {
      return { port, child: await start(port) }
    } catch (err) {
      if (attempt >= 4) throw err
    }
  }
}

export interface Credentials {
  /** the default user's password (`requirepass`) */
  readonly password: string
  /** an ACL user with every command */
  readonly user: string
  readonly userPassword: string
}

const aclUser = (c: Credentials): string[] => ['--user', c.user, 'on', `>${c.userPassword}`, '~*', '&*', '+@all']

export interface TlsSentinel {
  /** `host:port` of the Sentinel's TLS port */
  readonly sentinels: string
  readonly name: string
  readonly masterPort: number
  close(): Promise<void>
}

/**
 * A TLS-only master and a TLS-only Sentinel watching it (quorum 1), each with a password and an ACL
 * user; the Sentinel signs in to the master as the master's ACL user, over TLS (`tls-replication`).
 * With `plainSentinel` the Sentinel listens in plain text (and still reaches the master over TLS).
 */
export async function startTlsSentinel(
  ca: TestCa,
  master: Credentials,
  sentinel: Credentials,
  name = 'mymaster',
  o: { plainSentinel?: boolean } = {},
): Promise<TlsSentinel> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-tls-sentinel-'))
  const children: ChildProcess[] = []
  const close = async (): Promise<void> => {
    for (const child of children) await kill(child)
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    const m = await onFreePort(false, (port) =>
      spawnUntil(
        [...tlsArgs(ca, port), '--dir', dir, '--requirepass', master.password, ...aclUser(master)],
        port,
        'Ready to accept connections',
      ),
    )
    children.push(m.child)
    const s = await onFreePort(false, (port) => {
      const conf = join(dir, `sentinel-${port}.conf`)
      const lines = [
        ...(o.plainSentinel ? [`port ${port}`] : ['port 0', `tls-port ${port}`]),
        `bind ${HOST}`,
        `dir ${dir}`,
        `tls-cert-file ${ca.cert}`,
        `tls-key-file ${ca.key}`,
        `tls-ca-cert-file ${ca.ca}`,
        'tls-auth-clients no',
        'tls-replication yes',
        `requirepass ${sentinel.password}`,
        `user ${sentinel.user} on >${sentinel.userPassword} -@all +sentinel|get-master-addr-by-name +sentinel|sentinels`,
        `sentinel monitor ${name} ${HOST} ${m.port} 1`,
        `sentinel auth-user ${name} ${master.user}`,
        `sentinel auth-pass ${name} ${master.userPassword}`,
      ]
      writeFileSync(conf, `${lines.join('\n')}\n`)
      return spawnUntil([conf, '--sentinel'], port, '+monitor master')
    })
    children.push(s.child)
    return { sentinels: `${HOST}:${s.port}`, name, masterPort: m.port, close }
  } catch (err) {
    await close()
    throw err
  }
}

export interface TlsCluster {
  /** `localhost:port,…`: the masters by the name their certificate carries */
  readonly clusterNodes: string
  readonly ports: readonly number[]
  close(): Promise<void>
}

/**
 * A Redis Cluster of `masters` TLS-only masters (the cluster bus over TLS too) that announce
 * themselves by the host name `localhost`, as managed services announce theirs
 * (`cluster-preferred-endpoint-type hostname`), all with the default user's `password`.
 */
export async function startTlsCluster(ca: TestCa, password: string, masters = 3): Promise<TlsCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-tls-cluster-'))
  const children: ChildProcess[] = []
  const ports: number[] = []
  const close = async (): Promise<void> => {
    for (const child of children) await kill(child)
    rmSync(dir, { recursive: true, force: true })
  }
  const cli = (...args: string[]) =>
    spawnSync('redis-cli', ['--tls', '--cacert', ca.ca, '--no-auth-warning', '-a', password, ...args], {
      encoding: 'utf8',
      timeout: 20_000,
    })
  try {
    for (let i = 0; i < masters; i++) {
      const node = await onFreePort(true, (port) =>
        spawnUntil(
          [
            ...tlsArgs(ca, port),
            '--dir',
            dir,
            '--requirepass',
            password,
            '--masterauth',
            password,
            '--tls-cluster',
            'yes',
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            `nodes-${port}.conf`,
            '--cluster-node-timeout',
            '2000',
            '--cluster-announce-hostname',
            'localhost',
            '--cluster-preferred-endpoint-type',
            'hostname',
          ],
          port,
          'Ready to accept connections',
        ),
      )
      children.push(node.child)
      ports.push(node.port)
    }
    const created = cli(
      '--cluster',
      'create',
      ...ports.map((p) => `${HOST}:${p}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    )
    if (created.status !== 0)
      throw new Error(`redis-cli --cluster create failed:\n${created.stdout}\n${created.stderr}`)
    // Every node must agree the cluster is up before clients connect (bounded: a broken start fails here).
    const deadline = Date.now() + 15_000
    for (const port of ports) {
      for (;;) {
        const info = cli('-h', HOST, '-p', String(port), 'CLUSTER', 'INFO')
        if (info.stdout.includes('cluster_state:ok')) break
        if (Date.now() > deadline) throw new Error(`cluster not ok on ${port}:\n${info.stdout}${info.stderr}`)
        await new Promise((r) => setTimeout(r, 100))
      }
    }
  } catch (err) {
    await close()
    throw err
  }
  return { clusterNodes: ports.map((p) => `localhost:${p}`).join(','), ports, close }
}
