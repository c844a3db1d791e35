/**
 * The floor under any handoff: a bare PUBLISH from one process to a SUBSCRIBE in another, through
 * the same kind of private redis-server, after the same 20 ms idle gap as the contenders. No
 * cross-process limiter can hand a permit over faster than this on the machine at that moment.
 * Run as a child by ./index.ts (`child` argument); the parent publishes.
 */
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'

const now = (): number => Number(process.hrtime.bigint()) / 1e6
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

export interface Floor {
  readonly p50: number
  readonly p99: number
}

async function child(url: string): Promise<void> {
  const sub = new Redis(url)
  await sub.subscribe('floor')
  const latencies: number[] = []
  sub.on('message', (_channel: string, sent: string) => latencies.push(now() - Number(sent)))
  process.send!({ ready: true })
  process.once('message', () => {
    process.send!({ latencies }, () => process.exit(0))
  })
}

export async function measureFloor(url: string, samples = 200): Promise<Floor> {
  const proc = fork(fileURLToPath(import.meta.url), ['child', url], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  await new Promise((resolve) => proc.once('message', resolve))
  const pub = new Redis(url)
  for (let i = 0; i < samples; i++) {
    await pub.publish('floor', String(now()))
    await sleep(20)
  }
  const latencies = await new Promise<number[]>((resolve) => {
    proc.once('message', (m: { latencies: number[] }) => resolve(m.latencies))
    proc.send({ done: true })
  })
  pub.disconnect()
  latencies.sort((a, b) => a - b)
  const at = (q: number): number =>
    latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)] ?? Number.NaN
  return { p50: at(0.5), p99: at(0.99) }
}

if (process.argv[2] === 'child') void child(process.argv[3]!)
