/**
 * HAProxy as the one-node reference: one backend per (organisation, endpoint) whose single server
 * has `maxconn` = the endpoint's limit, so HAProxy keeps at most that many requests in progress at
 * the API and queues the rest in the backend (`timeout queue`), the HAProxy way of limiting
 * concurrency. Debian's `haproxy` is installed with apt-get when it is missing and this process may
 * (root); otherwise the benchmark prints why it was skipped.
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, waitForHttp, type ServerChild } from '../children.js'

export interface LimitedRoute {
  /** the Authorization header value that names the organisation */
  readonly authorization: string
  readonly method: string
  /** the request path (no query); `{n}` stands for any number */
  readonly path: string
  readonly limit: number
}

/** The haproxy binary, installed from Debian when missing and possible; or why there is none. */
export function findHaproxy(): { path: string } | { skipped: string } {
  const which = (): string | undefined => {
    const found = spawnSync('sh', ['-c', 'command -v haproxy'], { encoding: 'utf8' })
    return found.status === 0 ? found.stdout.trim() : undefined
  }
  const present = which()
  if (present !== undefined) return { path: present }
  if (process.getuid?.() !== 0)
    return { skipped: 'haproxy is not installed and installing it needs root (apt-get install haproxy)' }
  const apt = spawnSync(
    'sh',
    ['-c', 'apt-get install -y -q haproxy || (apt-get update -q && apt-get install -y -q haproxy)'],
    {
      encoding: 'utf8',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      timeout: 300_000,
    },
  )
  const installed = which()
  if (installed !== undefined) return { path: installed }
  const why = (apt.stderr || apt.stdout || '').trim().split('\n').at(-1) ?? 'unknown error'
  return { skipped: `haproxy is not installed and apt-get install haproxy failed (${why})` }
}

export function haproxyConfig(port: number, upstream: URL, routes: readonly LimitedRoute[]): string {
  const lines = [
    'global',
    // each proxied request holds two descriptors; HAProxy refuses to start above the process's limit
    '  maxconn 8000',
    'defaults',
    '  mode http',
    '  timeout connect 10s',
    '  timeout client 120s',
    '  timeout server 120s',
    '  timeout queue 120s',
    '  timeout http-keep-alive 30s',
    'frontend api',
    `  bind 127.0.0.1:${port}`,
  ]
  const backends: string[] = []
  routes.forEach((r, i) => {
    lines.push(`  acl r${i}_auth req.hdr(authorization) -m str ${r.authorization.replace(/ /g, '\\ ')}`)
    lines.push(`  acl r${i}_path path_reg ^${r.path.replace('{n}', '[0-9]+')}$`)
    lines.push(`  use_backend key${i} if METH_${r.method} r${i}_auth r${i}_path`)
    backends.push(
      '',
      `backend key${i}`,
      '  http-reuse always',
      `  server api ${upstream.hostname}:${upstream.port} maxconn ${r.limit}`,
    )
  })
  lines.push(
    '  default_backend open',
    ...backends,
    '',
    'backend open',
    '  http-reuse always',
    `  server api ${upstream.hostname}:${upstream.port}`,
  )
  return `${lines.join('\n')}\n`
}

/** HAProxy in front of `upstream` (the sim's root, e.g. http://127.0.0.1:PORT) with the routes' limits. */
export async function startHaproxy(
  binary: string,
  upstream: string,
  routes: readonly LimitedRoute[],
): Promise<ServerChild> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'sluice-haproxy-'))
  const file = join(dir, 'haproxy.cfg')
  writeFileSync(file, haproxyConfig(port, new URL(upstream), routes))
  const child = spawn(binary, ['-db', '-f', file], {
    stdio: ['ignore', 'ignore', process.env.SLUICE_BENCH_VERBOSE ? 'inherit' : 'ignore'],
  })
  const stop = (): Promise<void> =>
    new Promise<void>((resolve) => {
      const done = (): void => {
        rmSync(dir, { recursive: true, force: true })
        resolve()
      }
      if (child.exitCode !== null || child.signalCode !== null) return done()
      child.once('exit', done)
      child.kill('SIGTERM')
      setTimeout(() => child.kill('SIGKILL'), 5_000).unref()
    })
  try {
    await waitForHttp(`http://127.0.0.1:${port}/__sim/stats`)
  } catch (err) {
    await stop()
    throw err
  }
  return { process: child, stop, url: `http://127.0.0.1:${port}`, pid: child.pid! }
}
