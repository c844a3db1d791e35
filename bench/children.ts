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
