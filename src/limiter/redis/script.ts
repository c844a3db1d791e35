import type { Cluster, Redis } from 'ioredis'
import type { LimiterObserver } from '../types.js'

export type RedisClient = Redis | Cluster

/** One Lua script: a name for metrics and ioredis, how many KEYS it takes, its source. */
export interface ScriptDef {
  readonly name: string
  readonly numberOfKeys: number
  readonly lua: string
}

type ScriptFn = (...args: (string | number)[]) => Promise<unknown>

/**
 * Runs scripts through ioredis's `defineCommand`, which sends EVALSHA and falls back to EVAL on a
 * NOSCRIPT reply (after SCRIPT FLUSH, a restart or a failover to a server that never saw it).
 * Every call is timed and reported to the observer.
 */
export class Scripts {
  readonly #defined = new Set<string>()

  constructor(
    readonly client: RedisClient,
    private readonly observer: LimiterObserver | undefined,
  ) {}

  async run(def: ScriptDef, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    const command = `sluice_${def.name}`
    if (!this.#defined.has(command)) {
      this.client.defineCommand(command, { numberOfKeys: def.numberOfKeys, lua: def.lua })
      this.#defined.add(command)
    }
    // defineCommand adds a method named after the command; ioredis cannot type it statically.
    const client = this.client as unknown as Record<string, ScriptFn>
    const started = process.hrtime.bigint()
    try {
      const reply = await client[command]!(...keys, ...args)
      this.#report(def.name, started, true)
      return reply
    } catch (err) {
      this.#report(def.name, started, false)
      throw err
    }
  }

  #report(name: string, started: bigint, ok: boolean): void {
    const observer = this.observer
    if (!observer?.redisCommand) return
    try {
      observer.redisCommand(name, Number(process.hrtime.bigint() - started) / 1e9, ok)
    } catch {
      // a metrics hook must never break a permit
    }
  }
}

/** Reads a Lua array reply of strings (ioredis gives `unknown`). */
export function stringsOf(reply: unknown): string[] {
  return Array.isArray(reply) ? reply.map((v) => String(v)) : []
}
