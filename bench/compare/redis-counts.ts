/**
 * What Redis did for the proxies: INFO commandstats deltas (commands run inside scripts included),
 * Redis's own CPU time, from a short MONITOR the commands the clients sent (round trips), each script
 * named, apart from the commands the scripts ran, and from SLOWLOG each script's time per call.
 */
import { createHash } from 'node:crypto'
import { connect } from 'node:net'
import type { Redis } from 'ioredis'
import { ACQUIRE_SCRIPT } from '../../src/limiter/redis/acquire/index.js'
import { ADOPT_SCRIPT } from '../../src/limiter/redis/adopt/index.js'
import { HEARTBEAT_SCRIPT } from '../../src/limiter/redis/heartbeat/index.js'
import { RELEASE_SCRIPT } from '../../src/limiter/redis/release/index.js'
import { RENEW_SCRIPT } from '../../src/limiter/redis/renew/index.js'
import { ACTIVE_SCRIPT, STATUS_SCRIPT } from '../../src/limiter/redis/status/index.js'
import { SYNC_SCRIPT } from '../../src/limiter/redis/sync/index.js'

export interface RedisCounters {
  /** calls by command name (INFO commandstats) */
  readonly calls: ReadonlyMap<string, number>
  /** used_cpu_user + used_cpu_sys, ms */
  readonly cpuMs: number
}

export async function readCounters(client: Redis): Promise<RedisCounters> {
  const calls = new Map<string, number>()
  for (const m of (await client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    calls.set(m[1]!, Number(m[2]))
  const cpu = await client.info('cpu')
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0)
  return { calls, cpuMs: (field('used_cpu_user') + field('used_cpu_sys')) * 1000 }
}

/** Redis's CPU time so far (INFO cpu), ms, read through `client`: a target's Redis, for its CPU per request. */
export function redisCpuReader(client: Redis): () => Promise<number> {
  return async () => (await readCounters(client)).cpuMs
}

/** Calls between two readings, by command (INFO and MONITOR, the bench's own, left out). */
export function callsBetween(before: RedisCounters, after: RedisCounters): Map<string, number> {
  const delta = new Map<string, number>()
  for (const [name, calls] of after.calls) {
    if (name === 'info' || name === 'monitor') continue
    const d = calls - (before.calls.get(name) ?? 0)
    if (d > 0) delta.set(name, d)
  }
  return delta
}

const SCRIPT_BY_SHA = new Map(
  [
    ACQUIRE_SCRIPT,
    ADOPT_SCRIPT,
    HEARTBEAT_SCRIPT,
    RELEASE_SCRIPT,
    RENEW_SCRIPT,
    STATUS_SCRIPT,
    ACTIVE_SCRIPT,
    SYNC_SCRIPT,
  ].map((s) => [createHash('sha1').update(s.lua).digest('hex'), s.name]),
)

export interface MonitorCounts {
  /** what the clients sent, by command (EVALSHA/EVAL by script name: `evalsha acquire`) */
  readonly sent: Map<string, number>
  /** what the scripts ran, by the script that ran them and the command */
  readonly inScripts: Map<string, number>
  readonly scriptCalls: Map<string, number>
}

/**
 * MONITOR for `ms` on a socket of its own (plain RESP: ioredis's monitor mode mixed its replies up
 * with commands under this load): every command the server runs, the ones a script ran marked
 * `[0 lua]`, which are attributed to the client command just before them (Redis runs a script to its
 * end before anything else, so its commands follow its EVALSHA in the stream).
 */
export async function monitor(url: string, ms: number): Promise<MonitorCounts> {
  const sent = new Map<string, number>()
  const inScripts = new Map<string, number>()
  const scriptCalls = new Map<string, number>()
  const add = (map: Map<string, number>, key: string): void => void map.set(key, (map.get(key) ?? 0) + 1)
  let current = 'unknown'
  const line = (text: string): void => {
    const m = /^\+[\d.]+ \[\d+ ([^\]]+)\] (.*)$/.exec(text)
    if (m === null) return
    const args = [...m[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].slice(0, 2).map((a) => a[1]!)
    const name = (args[0] ?? '').toLowerCase()
    if (m[1]!.startsWith('lua')) {
      add(inScripts, `${current}: ${name}`)
    } else if (name === 'evalsha' || name === 'eval') {
      const script = name === 'evalsha' ? (SCRIPT_BY_SHA.get(args[1] ?? '') ?? 'unknown script') : 'eval (source sent)'
      current = script
      add(scriptCalls, script)
      add(sent, `${name} ${script}`)
    } else {
      current = name
      add(sent, name)
    }
  }
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  let rest = ''
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\r\n')
    rest = lines.pop()!
    for (const l of lines) line(l)
  })
  socket.on('error', () => {})
  socket.write('MONITOR\r\n')
  await new Promise((r) => setTimeout(r, ms))
  socket.destroy()
  return { sent, inScripts, scriptCalls }
}

/** Each script's calls and time inside Redis (µs, SLOWLOG's duration: wall time of the script, its commands included). */
export type ScriptTimes = Map<string, { calls: number; us: number }>

const SLOWLOG_LEN = 200_000

/** Logs every command from now on (slowlog-log-slower-than 0): for a short window, it costs Redis time of its own. */
export async function startScriptTimes(client: Redis): Promise<void> {
  await client.config('SET', 'slowlog-max-len', String(SLOWLOG_LEN))
  await client.config('SET', 'slowlog-log-slower-than', '0')
  await client.call('SLOWLOG', 'RESET')
}

/** Stops logging and sums what was logged since `startScriptTimes`, by script (EVALSHA by its sha) and other command. */
export async function readScriptTimes(client: Redis): Promise<ScriptTimes> {
  await client.config('SET', 'slowlog-log-slower-than', '10000')
  const entries = (await client.call('SLOWLOG', 'GET', String(SLOWLOG_LEN))) as [number, number, number, string[]][]
  const times: ScriptTimes = new Map()
  for (const [, , us, args] of entries) {
    const name = (args[0] ?? '').toLowerCase()
    if (name !== 'evalsha' && name !== 'eval') continue
    const script = name === 'evalsha' ? (SCRIPT_BY_SHA.get(args[1] ?? '') ?? 'unknown script') : 'eval (source sent)'
    const t = times.get(script) ?? { calls: 0, us: 0 }
    t.calls++
    t.us += us
    times.set(script, t)
  }
  return times
}
