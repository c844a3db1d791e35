/**
 * "One write per event-loop turn" (src/log/log-lines.ts) against one write(2) per line, in the whole
 * proxy: sluice (bench/tricks/sluice-child.ts) in front of the sim at zero latency, with the lines
 * batched (as shipped), written one by one, or the request log off; taking turns in short rounds
 * at 1 and 64 connections (bench/turns.ts). Each sluice writes its stdout into a pipe that a `cat`
 * drains, as a log collector would read it.
 */
import { spawn } from 'node:child_process'
import { freePort, ROOT, startSimChild, waitForHttp, type Child } from '../children.js'
import { ROUND_MS, ROUNDS } from '../core.js'
import { measureInTurns, type TurnFigures, type TurnTarget } from '../turns.js'

export const LOG_VARIANTS = [
  { name: 'lines written once per turn (as shipped)', env: {} },
  { name: 'one write(2) per line (pino destination, sync)', env: { BENCH_LOG_WRITES: 'per-line' } },
  { name: 'request log off', env: { SLUICE_REQUEST_LOG: 'false' } },
] as const
/** the plain version, which the others are compared with */
export const PLAIN_LOG_VARIANT = 1

export interface LogWritesRow {
  readonly variant: string
  readonly connections: number
  readonly figures: TurnFigures
}

async function startSluice(
  upstream: string,
  env: Record<string, string>,
): Promise<{ child: Child; target: Omit<TurnTarget, 'name'> }> {
  const [port, adminPort] = [await freePort(), await freePort()]
  const drain = spawn('cat', [], { stdio: ['pipe', 'ignore', 'inherit'] })
  const sluice = spawn(process.execPath, ['--import', 'tsx', 'bench/tricks/sluice-child.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      SLUICE_UPSTREAM: upstream,
      SLUICE_PORT: String(port),
      SLUICE_ADMIN_PORT: String(adminPort),
      SLUICE_HOST: '127.0.0.1',
      SLUICE_ADMIN_HOST: '127.0.0.1',
      ...env,
    },
    stdio: ['ignore', drain.stdin, 'inherit'],
  })
  const stop = async (): Promise<void> => {
    if (sluice.exitCode === null && sluice.signalCode === null) {
      const exited = new Promise((resolve) => sluice.once('exit', resolve))
      sluice.kill('SIGTERM')
      setTimeout(() => sluice.kill('SIGKILL'), 5_000).unref()
      await exited
    }
    drain.stdin.end()
  }
  await waitForHttp(`http://127.0.0.1:${adminPort}/healthz`)
  return { child: { process: sluice, stop }, target: { url: `http://127.0.0.1:${port}`, pid: sluice.pid! } }
}

export async function runLogWritesBench(): Promise<LogWritesRow[]> {
  const children: Child[] = []
  try {
    const sim = await startSimChild()
    children.push(sim)
    const targets: TurnTarget[] = []
    for (const v of LOG_VARIANTS) {
      const { child, target } = await startSluice(`${sim.url}/v2`, v.env)
      children.push(child)
      targets.push({ name: v.name, ...target })
    }
    const rows: LogWritesRow[] = []
    for (const connections of [1, 64]) {
      const figures = await measureInTurns(targets, {
        connections,
        rounds: ROUNDS,
        roundMs: ROUND_MS,
        baseline: PLAIN_LOG_VARIANT,
      })
      for (const [i, t] of targets.entries()) rows.push({ variant: t.name, connections, figures: figures[i]! })
    }
    return rows
  } finally {
    await Promise.all(children.map((c) => c.stop()))
  }
}
