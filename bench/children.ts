import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

/** Polls `url` until it answers (any status), so a child's readiness needs no log parsing. */
export async function waitForHttp(url: string, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs
  for (;;) {
    try {
      await fetch(url)
      return
    } catch {
      if (Date.now() > until) throw new Error(`${url} did not answer within ${timeoutMs} ms`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }
}

export interface Child {
  readonly process: ChildProcess
  stop(): Promise<void>
}

/**
 * The NODE_OPTIONS `npm start` gives sluice when none is set, or it is empty (`NODE_OPTIONS=${NODE_OPTIONS:-…}`
 * in package.json): a bench that measures sluice as users run it starts it with these (`nodeOptionsAsNpmStart`).
 */
export function npmStartNodeOptions(): string {
  const { scripts } = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { scripts: { start: string } }
  const found = /NODE_OPTIONS=\$\{NODE_OPTIONS:-([^}]*)\}/.exec(scripts.start)
  if (!found) throw new Error(`package.json's start script sets no default NODE_OPTIONS: ${scripts.start}`)
  return found[1]!
}

/** NODE_OPTIONS as `npm start` sets it: the caller's when set and not empty, else the start script's default. */
export function nodeOptionsAsNpmStart(): string {
  const given = process.env.NODE_OPTIONS
  return given !== undefined && given !== '' ? given : npmStartNodeOptions()
}

/** Runs `node <args>` with `env` added; output discarded unless SLUICE_BENCH_VERBOSE is set. */
export function startNode(args: string[], env: Record<string, string>): Child {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', process.env.SLUICE_BENCH_VERBOSE ? 'inherit' : 'ignore', 'inherit'],
  })
  return {
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.kill('SIGTERM')
        setTimeout(() => child.kill('SIGKILL'), 5_000).unref()
      }),
  }
}

/**
 * CPU time (user + system) a process has used, in ms, from /proc (Linux; clock ticks of 10 ms).
 * CPU per request is steadier than throughput on a shared machine: it does not count waiting.
 */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // Fields 14 and 15 of proc(5) (utime, stime) are the 12th and 13th after the command name.
  return (Number(fields[11]) + Number(fields[12])) * 10
}

export interface ServerChild extends Child {
  /** http://127.0.0.1:PORT */
  readonly url: string
  readonly pid: number
}

/** The sim (`dist/sim/main.js`) at zero latency on a free port, once it answers. */
export async function startSimChild(env: Record<string, string> = {}): Promise<ServerChild> {
  const port = await freePort()
  const child = startNode(['dist/sim/main.js'], {
    SIM_PORT: String(port),
    SIM_HOST: '127.0.0.1',
    SIM_LATENCY_MS: '0',
    ...env,
  })
  const url = `http://127.0.0.1:${port}`
  await waitForHttp(`${url}/__sim/stats`)
  return { ...child, url, pid: child.process.pid! }
}

/** sluice (`dist/main.js`, or another build's `main`) in front of `upstream` on free ports, once its admin port answers. */
export async function startSluiceChild(
  upstream: string,
  env: Record<string, string> = {},
  main = 'dist/main.js',
): Promise<ServerChild> {
  const [port, adminPort] = [await freePort(), await freePort()]
  const child = startNode([main], {
    SLUICE_UPSTREAM: upstream,
    SLUICE_PORT: String(port),
    SLUICE_ADMIN_PORT: String(adminPort),
    SLUICE_HOST: '127.0.0.1',
    SLUICE_ADMIN_HOST: '127.0.0.1',
    ...env,
  })
  await waitForHttp(`http://127.0.0.1:${adminPort}/healthz`)
  return { ...child, url: `http://127.0.0.1:${port}`, pid: child.process.pid! }
}
