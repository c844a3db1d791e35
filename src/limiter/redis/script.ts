import { createHash } from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'
import type { LimiterObserver } from '../types.js'
import { RedisTimeoutError } from './errors.js'

export type RedisClient = Redis | Cluster

/** One Lua script: a name for metrics, how many KEYS it takes, its source. */
export interface ScriptDef {
  readonly name: string
  readonly numberOfKeys: number
  readonly lua: string
  /** Written at once, with whatever this turn held back: a release hands its permit to the next waiter. */
  readonly urgent?: boolean
}

/** The socket of a single-node connection, corked to gather one turn's scripts into one write. */
interface Corkable {
  cork(): void
  uncork(): void
}

/** What a script call may ask of the runner. */
export interface RunOptions {
  /** Asked before a resend after NOSCRIPT; false drops it (an acquire whose waiter was withdrawn meanwhile must not queue an id nobody waits for). */
  readonly resendIf?: () => boolean
}

/** Runs one of the limiter's scripts. `Scripts` on a real connection; tests may pass a fake. */
export interface ScriptRunner {
  run(
    def: ScriptDef,
    keys: readonly string[],
    args: readonly (string | number)[],
    options?: RunOptions,
  ): Promise<unknown>
}

/** A script not re-sent after NOSCRIPT because its caller no longer wanted it (see RunOptions.resendIf). */
export class ScriptDroppedError extends Error {
  constructor(name: string) {
    super(`the ${name} script was not re-sent: no longer wanted`)
  }
}

/**
 * An error Redis answered about one semaphore's keys (a key of the wrong type, a corrupt entry that
 * makes a script fail): Redis is reachable, only that key is broken. Anything else (a timeout, a
 * closed connection, LOADING, READONLY, CLUSTERDOWN, OOM…) means Redis cannot serve permits now.
 */
export function isKeyError(err: unknown): boolean {
  if (!(err instanceof Error) || err.name !== 'ReplyError') return false
  return /^(WRONGTYPE|ERR)\b/.test(err.message)
}

/** A script waiting for its answer, and when it stops waiting (`performance.now()`, monotonic). */
interface InFlight {
  deadline: number
  readonly fail: () => void
}

/** Redis's answer to EVALSHA for a script it does not have (after SCRIPT FLUSH, a restart, a failover). */
const isNoScript = (err: unknown): boolean => err instanceof Error && err.message.startsWith('NOSCRIPT')

/**
 * Runs the limiter's scripts: EVALSHA, EVAL on NOSCRIPT, one timeout timer for all, one write per event-loop
 * turn (docs/redis-limiter.md, "Scripts"). Every call is timed and reported to the observer.
 */
export class Scripts implements ScriptRunner {
  /** each script's SHA1, computed once */
  readonly #shas = new Map<ScriptDef, string>()
  /** in the order they were sent (a late timer may move deadlines: each is looked at) */
  readonly #inFlight = new Set<InFlight>()
  #timer: NodeJS.Timeout | NodeJS.Immediate | undefined
  /** when the armed timer should fire (monotonic ms) */
  #dueAt = 0

  constructor(
    readonly client: RedisClient,
    private readonly observer: LimiterObserver | undefined,
    private readonly timeoutMs: number,
  ) {}

  #shaOf(def: ScriptDef): string {
    let sha = this.#shas.get(def)
    if (sha === undefined) {
      sha = createHash('sha1').update(def.lua).digest('hex')
      this.#shas.set(def, sha)
    }
    return sha
  }

  async run(
    def: ScriptDef,
    keys: readonly string[],
    args: readonly (string | number)[],
    options?: RunOptions,
  ): Promise<unknown> {
    const started = performance.now()
    try {
      const reply = await this.#withDeadline(def, started, this.#send(def, keys, args, options))
      this.#report(def.name, started, true)
      return reply
    } catch (err) {
      this.#report(def.name, started, false)
      throw err
    }
  }

  /** the socket corked this turn, until setImmediate or an urgent script uncorks it */
  #corked: Corkable | undefined

  /** Corks the connection's socket for the rest of this turn, unless it is already. */
  #hold(): void {
    if (this.#corked !== undefined || !('stream' in this.client)) return
    // typed as always there, but ioredis sets it only once it first connects
    const stream = this.client.stream as Corkable | undefined
    if (stream === undefined) return
    this.#corked = stream
    stream.cork()
    setImmediate(() => {
      if (this.#corked !== stream) return // an urgent script uncorked it already
      this.#corked = undefined
      stream.uncork()
    })
  }

  /** An urgent script has joined what this turn held back: all of it goes out now, in one write. */
  #flush(): void {
    const corked = this.#corked
    this.#corked = undefined
    corked?.uncork()
  }

  async #send(
    def: ScriptDef,
    keys: readonly string[],
    args: readonly (string | number)[],
    options?: RunOptions,
  ): Promise<unknown> {
    if (def.urgent !== true) this.#hold()
    // ioredis writes the command (into the corked socket's buffer, if held) before call() returns
    const sent = this.client.call('evalsha', this.#shaOf(def), def.numberOfKeys, ...keys, ...args)
    if (def.urgent === true) this.#flush()
    try {
      return await sent
    } catch (err) {
      if (!isNoScript(err)) throw err
      if (options?.resendIf && !options.resendIf()) throw new ScriptDroppedError(def.name)
      return await this.client.call('eval', def.lua, def.numberOfKeys, ...keys, ...args)
    }
  }

  #withDeadline(def: ScriptDef, started: number, sent: Promise<unknown>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const entry: InFlight = {
        deadline: started + this.timeoutMs,
        fail: () => reject(new RedisTimeoutError(def.name, this.timeoutMs)),
      }
      this.#inFlight.add(entry)
      this.#arm()
      sent.then(
        (reply) => {
          this.#inFlight.delete(entry)
          resolve(reply)
        },
        (err: unknown) => {
          this.#inFlight.delete(entry)
          reject(err instanceof Error ? err : new Error(String(err)))
        },
      )
    })
  }

  #arm(): void {
    if (this.#timer !== undefined) return
    let next = Infinity
    for (const entry of this.#inFlight) next = Math.min(next, entry.deadline)
    if (next === Infinity) return
    this.#dueAt = next
    const timer = setTimeout(() => this.#expire(), Math.max(0, next - performance.now()))
    timer.unref()
    this.#timer = timer
  }

  /** The timer fired; a late timer is no proof Redis is down (docs/redis-limiter.md, "Scripts"). */
  #expire(): void {
    this.#timer = undefined
    const now = performance.now()
    if (now - this.#dueAt > Math.max(20, this.timeoutMs / 4)) {
      for (const entry of this.#inFlight) if (entry.deadline <= now) entry.deadline = now + this.timeoutMs
      this.#arm()
      return
    }
    this.#timer = setImmediate(() => this.#failOverdue())
  }

  #failOverdue(): void {
    this.#timer = undefined
    const now = performance.now()
    for (const entry of this.#inFlight) {
      if (entry.deadline > now) continue
      this.#inFlight.delete(entry)
      entry.fail()
    }
    this.#arm()
  }

  #report(name: string, started: number, ok: boolean): void {
    const observer = this.observer
    if (!observer?.redisCommand) return
    try {
      observer.redisCommand(name, (performance.now() - started) / 1000, ok)
    } catch {
      // a metrics hook must never break a permit
    }
  }
}

/** Reads a Lua array reply of strings (ioredis gives `unknown`). */
export function stringsOf(reply: unknown): string[] {
  return Array.isArray(reply) ? reply.map((v) => String(v)) : []
}
