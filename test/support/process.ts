import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** `dist/main.js`: `npm test` builds before it runs vitest, so child processes run the real build. */
export const MAIN_JS = fileURLToPath(new URL('../../dist/main.js', import.meta.url))

export interface ProxyProcess {
  readonly child: ChildProcess
  readonly pid: number
  /** the SLUICE_* env it was started with (to start a like one again) */
  readonly env: Readonly<Record<string, string>>
  readonly url: string
  readonly adminUrl: string
  /** everything the process wrote to stdout/stderr so far */
  output(): string
  /** SIGTERM and wait for exit; resolves with the exit code */
  stop(signal?: NodeJS.Signals): Promise<number | null>
  /** SIGSTOP: the process keeps its sockets but runs nothing (a GC pause, a starved pod) */
  freeze(): void
  /** SIGCONT after `freeze` */
  thaw(): void
  /** resident memory now, bytes (Linux /proc); undefined once it exited */
  rssBytes(): number | undefined
}

/** VmRSS of a live process from /proc/<pid>/status, in bytes. */
export function rssOf(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) * 1024 : undefined
  } catch {
    return undefined
  }
}

/** Starts `count` proxies with the same env, runs `fn` with them, and stops them all afterwards. */
export async function withProxies<T>(
  count: number,
  env: Record<string, string>,
  fn: (proxies: ProxyProcess[]) => Promise<T>,
): Promise<T> {
  const proxies = await Promise.all(Array.from({ length: count }, () => spawnProxy(env)))
  try {
    return await fn(proxies)
  } finally {
    await Promise.all(proxies.map((p) => p.stop()))
  }
}

/**
 * Starts `node dist/main.js` with the given SLUICE_* env on free ports; resolves once it listens.
 * `main`: another build's main.js instead (a benchmark comparing two builds), or a command that
 * becomes the proxy's process (`sh -c 'exec node …'`, as `npm start` runs).
 */
export async function spawnProxy(
  env: Record<string, string>,
  timeoutMs = 15_000,
  main: string | { readonly file: string; readonly args: readonly string[]; readonly cwd?: string } = MAIN_JS,
): Promise<ProxyProcess> {
  const [file, args] = typeof main === 'string' ? [process.execPath, [main]] : [main.file, main.args]
  const child = spawn(file, args, {
    cwd: typeof main === 'string' ? undefined : main.cwd,
    env: {
      PATH: process.env.PATH ?? '',
      SLUICE_HOST: '127.0.0.1',
      SLUICE_ADMIN_HOST: '127.0.0.1',
      SLUICE_PORT: '0',
      SLUICE_ADMIN_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const listening = await new Promise<{ proxyUrl: string; adminUrl: string }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL') // never left running behind a failed start
      reject(new Error(`proxy did not start in ${timeoutMs} ms:\n${out}`))
    }, timeoutMs)
    const onData = (): void => {
      const line = out.split('\n').find((l) => l.includes('"sluice listening"'))
      if (line === undefined) return
      clearTimeout(timer)
      child.stdout.off('data', onData)
      resolve(JSON.parse(line) as { proxyUrl: string; adminUrl: string })
    }
    child.stdout.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`proxy exited with ${code} before listening:\n${out}`))
    })
  })
  const alive = (): boolean => child.exitCode === null && child.signalCode === null
  return {
    child,
    pid: child.pid!,
    env,
    url: listening.proxyUrl,
    adminUrl: listening.adminUrl,
    output: () => out,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (!alive()) return child.exitCode
      const exited = once(child, 'exit') as Promise<[number | null]>
      child.kill(signal)
      child.kill('SIGCONT') // a frozen process would never act on SIGTERM
      const [code] = await exited
      return code
    },
    freeze() {
      if (alive()) child.kill('SIGSTOP')
    },
    thaw() {
      if (alive()) child.kill('SIGCONT')
    },
    rssBytes: () => (alive() ? rssOf(child.pid!) : undefined),
  }
}

/** A loopback port free a moment ago, for a process that must be told its port before it starts. */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}
