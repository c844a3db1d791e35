import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { spawnProxy } from '../support/process.js'
import { EXAMPLES_DIR, readYamlFile, type Tree } from './chart.js'
import { envOf, podOf, sluiceIn } from './pod.js'
import { canRender, renderOk } from './render.js'
import { onLoopback, reachesMode } from './running.js'
import { freePort } from '../support/process.js'
import { has, needs } from '../support/tools.js'

/**
 * examples/redis-tls.yaml, for real: the CA it mounts from a Secret and names in
 * NODE_EXTRA_CA_CERTS is what lets sluice reach a Redis that speaks TLS with a certificate of that
 * CA. A real redis-server on a TLS port, a CA and a server certificate made with openssl, and sluice
 * started with the rendered container's env (the mounted file replaced by its local copy).
 */

const hasOpenssl = has('openssl')
const hasRedis = has('redis-server')

function openssl(dir: string, ...args: string[]): void {
  const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8', timeout: 30_000 })
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}:\n${r.stderr}`)
}

/** A CA, and a certificate for 127.0.0.1 signed by it. */
function makeCertificates(dir: string): void {
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
    '/CN=127.0.0.1',
  )
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n')
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
}

describe.skipIf(!canRender || !hasOpenssl || !hasRedis)(
  `examples/redis-tls.yaml against a Redis that speaks TLS ${needs('go + sprig', 'openssl', 'redis-server')}`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-tls-'))
    const stops: (() => Promise<unknown> | void)[] = []
    afterAll(async () => {
      for (const stop of stops.reverse()) await stop()
      rmSync(dir, { recursive: true, force: true })
    })

    it('the CA mounted from the Secret and named in NODE_EXTRA_CA_CERTS is what lets sluice in', async () => {
      const values = readYamlFile(join(EXAMPLES_DIR, 'redis-tls.yaml')) as Tree
      const { manifests } = renderOk(values)
      const { spec } = podOf(manifests.find((m) => m.kind === 'Deployment')!)
      const sluice = sluiceIn(spec)

      // The env names a file inside a mount of a Secret volume: the chain the example documents.
      const caPath = sluice.env.find((e) => e.name === 'NODE_EXTRA_CA_CERTS')!.value!
      const mount = sluice.volumeMounts
        .filter((m) => caPath.startsWith(`${m.mountPath}/`))
        .sort((a, b) => b.mountPath.length - a.mountPath.length)[0]!
      expect(mount).toBeDefined()
      const volume = spec.volumes.find((v) => v.name === mount.name)!
      expect(volume.secret?.secretName).toBe('redis-ca')

      makeCertificates(dir)
      const tlsPort = await freePort()
      const redis: ChildProcess = spawn(
        'redis-server',
        [
          '--port',
          '0',
          '--tls-port',
          String(tlsPort),
          '--bind',
          '127.0.0.1',
          '--tls-cert-file',
          'redis.crt',
          '--tls-key-file',
          'redis.key',
          '--tls-ca-cert-file',
          'ca.crt',
          '--tls-auth-clients',
          'no',
          '--save',
          '',
          '--appendonly',
          'no',
        ],
        { cwd: dir, stdio: 'ignore' },
      )
      stops.push(() => void redis.kill('SIGKILL'))

      // The rendered env, on loopback and free ports; the Secret's URL and the mounted CA as local stand-ins.
      const env = onLoopback(envOf(sluice, manifests, spec), { SLUICE_REDIS_URL: `rediss://127.0.0.1:${tlsPort}/0` })
      const withCa = await spawnProxy({ ...env, NODE_EXTRA_CA_CERTS: join(dir, 'ca.crt') })
      stops.push(() => withCa.stop('SIGKILL'))
      expect(await reachesMode(withCa, 'redis'), withCa.output()).toBe(true)
      await withCa.stop()

      // Without the CA the same URL is refused (the server's certificate is not trusted): sluice runs on its fallback.
      const { NODE_EXTRA_CA_CERTS: _mounted, ...withoutCaEnv } = env
      const withoutCa = await spawnProxy(withoutCaEnv)
      stops.push(() => withoutCa.stop('SIGKILL'))
      expect(await reachesMode(withoutCa, 'local'), withoutCa.output()).toBe(true)
      expect(await reachesMode(withoutCa, 'redis', 10)).toBe(false)
    })
  },
)
