import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { RedisSettings } from '../../../src/limiter/redis/index.js'
import type { PermitKey } from '../../../src/limiter/types.js'

const WORKER = fileURLToPath(new URL('./fixtures/worker.ts', import.meta.url))

export interface WorkerEvent {
  event: string
  held?: number
  mode?: string
  message?: string
}

/** A limiter in a child process (see fixtures/worker.ts). */
export interface WorkerProcess {
  readonly child: ChildProcess
  acquire(key: PermitKey, n: number, limit: number): void
  release(): void
  /** resolves with the first event (from now on, or already seen and not yet taken) that matches */
  next(match: (e: WorkerEvent) => boolean, timeoutMs?: number): Promise<WorkerEvent>
  kill(signal?: NodeJS.Signals): Promise<void>
}

export async function startWorker(settings: RedisSettings, name: string): Promise<WorkerProcess> {
  const child = fork(WORKER, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, SLUICE_TEST_LIMITER_SETTINGS: JSON.stringify(settings), SLUICE_TEST_WORKER: name },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const backlog: WorkerEvent[] = []
  const waiting: { match: (e: WorkerEvent) => boolean; resolve: (e: WorkerEvent) => void }[] = []
  child.on('message', (e: WorkerEvent) => {
    const i = waiting.findIndex((w) => w.match(e))
    if (i >= 0) waiting.splice(i, 1)[0]!.resolve(e)
    else backlog.push(e)
  })
  const worker: WorkerProcess = {
    child,
    acquire: (key, n, limit) =>
      child.send({ cmd: 'acquire', n, limit, instance: key.instance, endpoint: key.endpoint }),
    release: () => child.send({ cmd: 'release' }),
    next(match, timeoutMs = 15_000) {
      const i = backlog.findIndex(match)
      if (i >= 0) return Promise.resolve(backlog.splice(i, 1)[0]!)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`worker ${name}: no matching event in ${timeoutMs} ms`)),
          timeoutMs,
        )
        waiting.push({
          match,
          resolve: (e) => {
            clearTimeout(timer)
            resolve(e)
          },
        })
      })
    },
    kill(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
      return new Promise((resolve) => {
        child.once('exit', () => resolve())
        child.kill(signal)
      })
    },
  }
  await worker.next((e) => e.event === 'ready', 20_000)
  return worker
}
