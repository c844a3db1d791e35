import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import { LimiterClosedError } from '../errors.js'
import { Deadlines } from '../deadlines.js'
import { abortReason } from '../memory/index.js'
import type {
  AcquireOptions,
  Limiter,
  LimiterMode,
  LimiterObserver,
  LimiterStatus,
  Permit,
  PermitKey,
  PermitOutcome,
  RateNews,
} from '../types.js'
import { connect, firstReady, type Connections } from './connection.js'
import { Fallback } from './fallback.js'
import { HeardRegistry } from './heard-registry.js'
import { LeaseLostError, RedisTimeoutError } from './errors.js'
import { brokenKeyLog, dataLossLogs, type RedisLimiterDeps, type RedisLimiterLog } from './limiter-deps.js'
import { heartbeat } from './heartbeat/index.js'
import { globalKeysOf, grantChannelPrefix, type GlobalKeys } from './keys.js'
import { limiterStatus } from './limiter-status.js'
import { RateNewsHub, rateNewsChannel } from './rate/news.js'
import { ReturnGate } from './return-gate.js'
import { Scripts } from './script.js'
import type { RedisSettings } from './settings.js'
import { SharedPermits } from './shared.js'
import { SluicePermit, Ticket, describeKey, type Grant, type LimitOptions } from './ticket.js'

export type { RedisLimiterDeps, RedisLimiterLog }

/** How often a replica that lost Redis checks whether it is back. */
const PROBE_MS = 250
/** How long the start waits for a first connection before it serves from the fallback. */
const START_WAIT_MS = 2_000

/**
 * The Redis backend: decides the mode (SharedPermits, or the Fallback while Redis is unreachable) and moves
 * waiting tickets between the two on a switch (docs/redis-limiter.md, "Failure modes").
 */
export class RedisLimiter implements Limiter {
  readonly backend = 'redis' as const
  readonly replicaId: string
  readonly #settings: RedisSettings
  readonly #log: RedisLimiterLog
  readonly #observer: LimiterObserver | undefined
  readonly #connections: Connections
  readonly #scripts: Scripts
  readonly #shared: SharedPermits
  readonly #global: GlobalKeys
  readonly #channel: string
  readonly #rateNews: RateNewsHub
  readonly #fallback: Fallback
  readonly #gate: ReturnGate
  readonly #syncMs: number
  readonly heard: HeardRegistry // the registry as last heard: the `local` fallback's shares (of slots, of starts) rest on it

  #mode: LimiterMode
  #reached = false // Redis answered once since start (ready())
  #closing: string | undefined
  #closed = false
  #recovering: Promise<void> | undefined
  #lastError: string | undefined
  readonly #pending = new Set<Ticket>()
  /** every ticket's deadline, on one timer */
  readonly #deadlines = new Deadlines()
  /** a ticket settled: made once, not per ticket */
  readonly #forget = (ticket: Ticket): void => void this.#pending.delete(ticket)
  readonly #timers: NodeJS.Timeout[] = []

  constructor(settings: RedisSettings, deps: RedisLimiterDeps) {
    this.#settings = settings
    this.#log = deps.log
    this.#observer = deps.observer
    // no white space: a grant message separates two ids with a space
    this.replicaId = `${(deps.replicaId ?? `${hostname()}-${process.pid}`).replace(/\s/g, '-')}.${randomBytes(4).toString('hex')}`
    this.#mode = settings.fallback
    this.#syncMs = Math.max(50, Math.floor(settings.leaseMs / 3))
    this.heard = new HeardRegistry(this.replicaId, this.#syncMs)
    this.#global = globalKeysOf(settings.keyPrefix)
    const channelPrefix = grantChannelPrefix(settings.keyPrefix)
    this.#channel = channelPrefix + this.replicaId
    this.#rateNews = new RateNewsHub(rateNewsChannel(settings.keyPrefix))
    this.#fallback = new Fallback(
      settings.fallback,
      {
        makePermit: (key, limits, grant, waitedMs, app) => this.#permit(key, limits, grant, waitedMs, app),
        limitOf: (key, limits) => this.#shared.knownLimit(key, limits),
        shareOf: (key, limit) => this.heard.shareOf(key, limit),
        grantedAfterRecovery: () => void this.#adoptUnshared(),
        redisIsBack: () => this.#mode === 'redis',
      },
      deps.fairness,
    )
    this.#gate = new ReturnGate(
      this.#fallback,
      this.heard,
      (t) => this.#shared.enqueue(t),
      (t) => this.#route(t),
    )
    this.#connections = connect(settings)
    this.#scripts = new Scripts(this.#connections.command, deps.observer, settings.commandTimeoutMs)
    this.#shared = new SharedPermits(
      this.#scripts,
      {
        prefix: settings.keyPrefix,
        replicaId: this.replicaId,
        channelPrefix,
        leaseMs: settings.leaseMs,
        syncMs: this.#syncMs,
        liveMs: settings.leaseMs,
        idleMs: settings.leaseMs * 3,
        ...{ fairness: deps.fairness, keepForMs: deps.keepForMs, keepPermits: settings.keepPermits },
      },
      {
        makePermit: (key, limits, grant, waitedMs, app) => this.#permit(key, limits, grant, waitedMs, app),
        limitChanged: (key, change) => this.#observe((o) => o.limitChanged?.(key, change)),
        failed: (err) => this.#redisFailed(err),
        keyBroken: brokenKeyLog(this.#log),
        reroute: (ticket) => this.#route(ticket),
        lost: (permit) => this.#permitLost(permit),
        ...dataLossLogs(this.#log),
        bug: (err) => this.#log.error({ err }, 'limiter: bug: a waiter move its lifecycle does not allow, refused'),
      },
    )
  }

  /** Connects (waiting a little for Redis, never failing when it is down) and starts the timers. */
  async start(): Promise<void> {
    const { command, subscriber } = this.#connections
    command.on('error', (err: Error) => this.#connectionError(err))
    subscriber.on('error', (err: Error) => this.#connectionError(err))
    command.on('close', () => this.#redisFailed(new Error('connection to Redis closed')))
    command.on('ready', () => void this.#recover())
    subscriber.on('message', (channel: string, message: string) =>
      channel === this.#channel ? this.#shared.onMessage(message) : this.#rateNews.heard(message),
    )
    const subscribed = subscriber.subscribe(this.#channel, this.#rateNews.channel).catch((err: unknown) => {
      this.#log.warn(
        { err },
        'limiter: cannot subscribe to the grant channel yet; grants are found by the sync until then',
      )
    })

    const every = (ms: number, fn: () => void): void => {
      const timer = setInterval(fn, ms)
      timer.unref()
      this.#timers.push(timer)
    }
    every(this.#syncMs, () => void this.#tick())
    every(PROBE_MS, () => {
      if (this.#mode !== 'redis') void this.#recover()
      else if (this.#gate.beatsOften()) void this.#tick(false) // the others see this replica back (return-gate.ts)
    })

    await firstReady(command, START_WAIT_MS)
    if (command.status === 'ready') {
      await this.#recover()
      await Promise.race([subscribed, new Promise((r) => setTimeout(r, START_WAIT_MS).unref())])
    }
    if (this.#mode !== 'redis') {
      // (the switch to `redis` reports itself; the starting fallback mode is reported here)
      this.#log.warn(
        { fallback: this.#settings.fallback, err: this.#lastError },
        'limiter: Redis unreachable at start; using the fallback until it answers',
      )
      this.#reportMode(this.#mode)
    }
  }

  mode(): LimiterMode {
    return this.#mode
  }

  /** The script runner and the live replica count, for the rate gate beside this limiter (docs/redis-limiter.md, "Rates"). */
  get scripts(): Scripts {
    return this.#scripts
  }

  replicas(): number {
    return this.heard.replicas()
  }

  /** Holds and rates other replicas' answers taught (rate/news.ts), for the rate limiter around this one. */
  onRateNews(listener: (news: RateNews) => void): void {
    this.#rateNews.listen(listener)
  }

  /** In `closed`, Ready once Redis answered since start: through an outage it answers 503 itself, but a pod that
   * never reached Redis (a wrong password) stops its rollout (docs/redis-limiter.md, "Failure modes"). */
  ready(): boolean {
    return this.#closing === undefined && (this.#mode !== 'closed' || this.#reached)
  }

  acquire(key: PermitKey, options: AcquireOptions): Promise<Permit> {
    if (this.#closing !== undefined) return Promise.reject(new LimiterClosedError(this.#closing))
    if (options.signal?.aborted) return Promise.reject(abortReason(options.signal))
    return new Promise<Permit>((resolve, reject) => {
      const ticket = this.#gate.isOpen
        ? new Ticket(key, options, resolve, reject, this.#forget, this.#deadlines)
        : this.#gate.watched(key, options, resolve, reject, this.#forget, this.#deadlines)
      this.#pending.add(ticket)
      this.#route(ticket)
    })
  }

  limitOf(key: PermitKey, options: LimitOptions): number {
    return this.#shared.knownLimit(key, options)
  }

  #route(ticket: Ticket): void {
    if (ticket.settled) return
    // (falling back opened the gate: no ticket holds a slot of it then)
    if (this.#mode === 'redis') this.#gate.route(ticket)
    else this.#fallback.serve(ticket)
  }

  #permit(key: PermitKey, limits: LimitOptions, grant: Grant, waitedMs: number, app: string): SluicePermit {
    return new SluicePermit(
      key,
      limits,
      grant,
      waitedMs,
      (p, outcome) => this.#release(p, outcome),
      (p) => p.grant.kind !== 'redis' || this.#shared.leaseHolds(p),
      app,
    )
  }

  #release(permit: SluicePermit, outcome: PermitOutcome | undefined): void {
    if (permit.grant.kind === 'redis') {
      this.#fallback.unpin(permit)
      if (!this.#closed) this.#shared.releasePermit(permit, outcome)
    } else {
      this.#fallback.release(permit)
    }
  }

  /** How many semaphores this replica keeps state for, and what its fallback keeps (tests: nothing after the last request). */
  tracked(): { keys: number; remembered: number; waiting: number; pins: number; unshared: number } {
    return { keys: this.#shared.trackedKeys(), remembered: this.#shared.remembered(), ...this.#fallback.size() }
  }

  /** Tells the observer; metrics and logs never break the limiter. */
  #observe(tell: (observer: LimiterObserver) => void): void {
    try {
      if (this.#observer) tell(this.#observer)
    } catch {
      // an observer's failure is its own
    }
  }

  #permitLost(permit: SluicePermit): void {
    const err = new LeaseLostError(describeKey(permit.key))
    this.#log.warn({ instance: permit.key.instance, endpoint: permit.key.endpoint }, err.message)
    this.#observe((o) => o.leaseLost?.(permit.key))
    permit.markLost(err)
  }

  #setMode(mode: LimiterMode): void {
    if (mode === this.#mode) return
    this.#reached ||= mode === 'redis'
    this.#mode = mode
    this.#reportMode(mode)
  }

  #reportMode(mode: LimiterMode): void {
    this.#observe((o) => o.modeChanged?.(mode))
  }

  #connectionError(err: Error): void {
    // ioredis reports every failed reconnection; say it once per outage.
    if (this.#lastError === err.message) return
    this.#lastError = err.message
    if (this.#mode === 'redis') this.#log.warn({ err }, 'limiter: Redis connection error')
  }

  /** A Redis call failed or the connection closed: serve from the fallback until Redis answers. */
  #redisFailed(err: unknown): void {
    if (this.#mode !== 'redis' || this.#closed) return
    this.#log.warn(
      { err, fallback: this.#settings.fallback },
      `limiter: Redis unreachable, falling back to ${this.#settings.fallback}`,
    )
    this.heard.fellBack(err instanceof RedisTimeoutError ? this.#settings.commandTimeoutMs : 0)
    this.#gate.open()
    this.#setMode(this.#settings.fallback)
    this.#fallback.pinAll(this.#shared.heldPermits(), this.#shared.othersHeld())
    for (const ticket of this.#shared.detachWaiters()) this.#route(ticket)
  }

  /** Back to shared permits once Redis answers: flush, adopt, switch, move the local waiters. */
  #recover(): Promise<void> {
    if (this.#mode === 'redis' || this.#closing !== undefined) return Promise.resolve()
    if (this.#connections.command.status !== 'ready') return Promise.resolve()
    this.#recovering ??= this.#doRecover().finally(() => {
      this.#recovering = undefined
    })
    return this.#recovering
  }

  async #doRecover(): Promise<void> {
    let done: (keep?: boolean) => void, since: number
    const back = this.#reached && this.#settings.fallback === 'local'
    try {
      since = await this.#heartbeat(false, back)
      await this.#shared.syncAll()
      done = await this.#fallback.countIn(this.#shared)
    } catch (err) {
      this.#lastError = err instanceof Error ? err.message : String(err)
      return
    }
    if (this.#closing !== undefined) return done()
    if (back) this.#gate.closeSince(since)
    this.#setMode('redis')
    this.#lastError = undefined
    this.#log.info(
      { replicas: this.heard.replicas(), replicaId: this.replicaId },
      'limiter: sharing permits through Redis',
    )
    // Move the local waiters into the Redis queues, oldest first, before any local slot frees up.
    for (const ticket of this.#fallback.takeWaiting()) this.#route(ticket)
    this.#gate.countedIn(done)
    if (this.#fallback.unshared().length > 0) void this.#adoptUnshared()
    this.#gate.openIfAllBack()
  }

  async #adoptUnshared(): Promise<void> {
    try {
      ;(await this.#fallback.countIn(this.#shared))(!this.#gate.isOpen)
    } catch (err) {
      this.#redisFailed(err)
    }
  }

  async #heartbeat(leave: boolean, readOnly = false /* read the registry, no beat */): Promise<number> {
    const sentAt = this.heard.sending()
    const reading = await heartbeat(this.#scripts, this.#global, {
      replicaId: this.replicaId,
      ttlMs: this.#settings.leaseMs,
      leave,
      readOnly,
      activeTags: leave ? [] : this.#shared.announcedTags(),
    })
    if (!leave && this.heard.heard(reading, sentAt, !readOnly)) this.#shared.stateWentBack()
    return reading.at
  }

  /** Every lease third: renew leases and liveness, find lost grants, tell the registry we live (`sync` false: only beat). */
  async #tick(sync = true): Promise<void> {
    if (this.#mode !== 'redis' || this.#closed) return
    try {
      await this.#heartbeat(false)
      this.#gate.openIfAllBack()
      if (sync) await this.#shared.syncAll()
    } catch (err) {
      this.#redisFailed(err)
    }
  }

  async status(): Promise<LimiterStatus> {
    const details: Record<string, unknown> = {
      replicaId: this.replicaId,
      replicas: this.heard.replicas(),
      redis: this.#mode === 'redis' ? 'connected' : 'unreachable',
      fallback: this.#settings.fallback,
      leaseMs: this.#settings.leaseMs,
    }
    if (this.#lastError && this.#mode !== 'redis') details.lastError = this.#lastError
    return limiterStatus(this.#mode, details, this.#shared, this.#global, this.#fallback)
  }

  drain(reason = 'sluice is shutting down'): void {
    this.#closing ??= reason
    // no parked waiter is let in (one acquire and one withdrawal each) while the others are failed
    this.#shared.closing()
    for (const ticket of [...this.#pending]) ticket.fail(new LimiterClosedError(reason))
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.drain()
    for (const timer of this.#timers) clearInterval(timer)
    this.#shared.stop()
    if (this.#mode === 'redis') {
      // Best effort: withdraw what is left and leave the registry; leases cover anything missed.
      await Promise.race([
        Promise.allSettled([this.#shared.syncAll(), this.#heartbeat(true)]),
        new Promise((r) => setTimeout(r, this.#settings.commandTimeoutMs).unref()),
      ])
    }
    this.#closed = true
    for (const connection of [this.#connections.command, this.#connections.subscriber]) connection.disconnect()
    await this.#fallback.close()
  }
}
