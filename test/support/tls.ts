import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface TestCertificates {
  readonly dir: string
  /** the CA's certificate (PEM file), for NODE_EXTRA_CA_CERTS */
  readonly caFile: string
  /** a key and certificate for 127.0.0.1 signed by the CA */
  readonly key: Buffer
  readonly cert: Buffer
  remove(): void
}

function openssl(dir: string, ...args: string[]): void {
  const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8', timeout: 30_000 })
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}:\n${r.stderr}`)
}

/** A throw-away CA and a server certificate for 127.0.0.1 signed by it, made with openssl in a temp dir. */
export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-test-ca-'))
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
    'server.key',
    '-out',
    'server.csr',
    '-subj',
    '/CN=127.0.0.1',
  )
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n')
  openssl(
    dir,
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '1',
    '-extfile',
    'san.ext',
  )
  return {
    dir,
    caFile: join(dir, 'ca.crt'),
    key: readFileSync(join(dir, 'server.key')),
    cert: readFileSync(join(dir, 'server.crt')),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}
