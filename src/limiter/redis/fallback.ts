import { LimiterClosedError } from '../errors.js'
import { DEFAULT_APP } from '../../apps/gate.js'
import type { FairShare } from '../fairness/policy.js'
import { createMemoryLimiter, type MemoryLimiter } from '../memory/index.js'
import type { KeyStatus, Permit, PermitKey } from '../types.js'
import type { SharedPermits } from './shared.js'
import type { OthersHeld } from './shared-types.js'
import type { Grant, LimitOptions, SluicePermit, Ticket } from './ticket.js'

/** What a replica does while Redis is unreachable (README: "Redis limiter", `redis.fallback`). */
export type FallbackMode = 'local' | 'open' | 'closed'

/** A local fallback attempt; `stale` once the ticket moved elsewhere (its outcome is then undone). */
interface LocalAttempt {
  readonly abort: AbortController
  stale: boolean
}

/** A local slot held for a Redis permit that outlived Redis's reachability. */
interface Pin {
  readonly abort: AbortController
  local: Permit | undefined
  done: boolean
}

/** A pin waits as long as its permit is in flight; the day is only a bound for the timer. */
const PIN_DEADLINE_MS = 86_400_000

export interface FallbackHooks {
  makePermit(key: PermitKey, limits: LimitOptions, grant: Grant, waitedMs: number, app: string): SluicePermit
  /** the key's limit as last known (a learned one as Redis last said, else where it starts) */
  limitOf?(key: PermitKey, limits: LimitOptions): number
  /** this replica's share of a limit in `local` mode: the shares of the replicas alive add up to it (local-share.ts) */
  shareOf(key: PermitKey, limit: number): number
  /** a permit was granted by the fallback after Redis came back: it must be counted there */
  grantedAfterRecovery(): void
  /** whether Redis serves permits again */
  redisIsBack(): boolean
}

/**
 * The Redis backend's fallback while Redis is unreachable (`local`, `open` or `closed`): its waits, the
 * permits it grants (counted in Redis on return), and the local slots pinned for Redis permits still in
 * flight so their slots are not granted twice (docs/redis-limiter.md, "Failure modes").
 */
export class Fallback {
  readonly #local: MemoryLimiter
  readonly #attempts = new Map<Ticket, LocalAttempt>()
  readonly #pins = new Map<SluicePermit, Pin>()
  /** permits granted by the fallback and not (yet) counted in Redis */
  readonly #unshared = new Set<SluicePermit>()
  /** local slots held for other replicas' Redis permits, each for a lease at most: its timer ends it */
  readonly #others = new Set<() => void>()

  constructor(
    readonly mode: FallbackMode,
    private readonly hooks: FallbackHooks,
    fairness?: FairShare,
  ) {
    // the same fair share between apps as through Redis, within this replica's share of each limit
    this.#local = createMemoryLimiter({ mode: 'local', fairness })
  }

  #localLimit(key: PermitKey, limits: LimitOptions): number {
    return this.hooks.shareOf(key, this.hooks.limitOf?.(key, limits) ?? limits.limit)
  }

  /** Serves a ticket while Redis is unreachable. */
  serve(ticket: Ticket): void {
    switch (this.mode) {
      case 'local':
        this.#acquireLocal(ticket)
        return
      case 'open':
        ticket.succeed((waitedMs) => this.#permit(ticket, { kind: 'open' }, waitedMs))
        return
      default:
        ticket.fail(new LimiterClosedError('Redis is unreachable and the limiter fallback is closed'))
    }
  }

  #permit(ticket: Ticket, grant: Grant, waitedMs: number): SluicePermit {
    const permit = this.hooks.makePermit(ticket.key, ticket.options, grant, waitedMs, ticket.options.app ?? DEFAULT_APP)
    this.#unshared.add(permit)
    return permit
  }

  #acquireLocal(ticket: Ticket): void {
    const attempt: LocalAttempt = { abort: new AbortController(), stale: false }
    this.#attempts.set(ticket, attempt)
    ticket.servedBy(() => {
      attempt.stale = true
      this.#attempts.delete(ticket)
      attempt.abort.abort()
    })
    const { options } = ticket
    this.#local
      .acquire(ticket.key, {
        limit: this.#localLimit(ticket.key, options),
        deadline: options.deadline,
        signal: attempt.abort.signal,
        // only a request sent back by an upstream 429 keeps its place (at the head); a new one, or
        // one moved from Redis, queues fairly behind its app's earlier waiters
        arrivedAt: ticket.retried ? ticket.arrivedAt : undefined,
        maxQueue: options.maxQueue,
        app: options.app,
        followers: options.followers,
      })
      .then(
        (local) => {
          if (attempt.stale) return local.release()
          this.#attempts.delete(ticket)
          ticket.leftBackend()
          if (!ticket.succeed((waitedMs) => this.#permit(ticket, { kind: 'local', permit: local }, waitedMs)))
            local.release()
          else if (this.hooks.redisIsBack()) this.hooks.grantedAfterRecovery()
        },
        (err: Error) => {
          if (attempt.stale) return
          this.#attempts.delete(ticket)
          ticket.leftBackend()
          ticket.fail(err)
        },
      )
  }

  /** Gives back a permit the fallback granted (one not counted in Redis). */
  release(permit: SluicePermit): void {
    this.#unshared.delete(permit)
    if (permit.grant.kind === 'local') permit.grant.permit.release()
  }

  /** The permits granted without Redis and still in flight. */
  unshared(): SluicePermit[] {
    return [...this.#unshared]
  }

  /**
   * Redis answers again: adopt every permit granted without it; call `done` once the local waiters have moved
   * to Redis, which frees the adopted permits' local slots. On a partial failure adopted permits keep their local slot as a pin.
   */
  async countIn(shared: SharedPermits): Promise<() => void> {
    const adopted: { permit: SluicePermit; before: Grant }[] = []
    try {
      await shared.adopt(this.unshared(), (permit, before) => {
        this.#unshared.delete(permit)
        adopted.push({ permit, before })
      })
    } catch (err) {
      for (const { permit, before } of adopted) {
        if (before.kind !== 'local') continue
        if (this.mode === 'local' && !permit.released) this.pinWith(permit, before.permit)
        else before.permit.release()
      }
      throw err
    }
    return () => {
      for (const { before } of adopted) if (before.kind === 'local') before.permit.release()
    }
  }

  /**
   * Entering `local`: Redis permits still in flight take local slots first, so they are not granted
   * twice — this replica's until released, other replicas' (as Redis last counted them) for a lease:
   * by then Redis would have given theirs back (docs/redis-limiter.md, "Failure modes").
   */
  pinAll(permits: readonly SluicePermit[], others: readonly OthersHeld[] = []): void {
    if (this.mode !== 'local') return
    for (const held of others) for (let i = 0; i < held.count; i++) this.#holdForOther(held)
    for (const permit of permits) {
      if (this.#pins.has(permit)) continue
      const pin: Pin = { abort: new AbortController(), local: undefined, done: false }
      this.#pins.set(permit, pin)
      this.#local
        .acquire(permit.key, {
          limit: this.#localLimit(permit.key, permit.limits),
          deadline: Date.now() + PIN_DEADLINE_MS,
          signal: pin.abort.signal,
          arrivedAt: 0,
          maxQueue: Number.MAX_SAFE_INTEGER,
          app: permit.app,
          uncapped: true,
        })
        .then(
          (local) => {
            if (pin.done) local.release()
            else pin.local = local
          },
          () => {}, // unpinned before its turn
        )
    }
  }

  #holdForOther({ key, limit, forMs }: OthersHeld): void {
    const abort = new AbortController()
    let local: Permit | undefined
    const end = (): void => {
      clearTimeout(timer)
      this.#others.delete(end)
      if (local) local.release()
      else abort.abort()
    }
    const timer = setTimeout(end, forMs)
    timer.unref()
    this.#others.add(end)
    this.#local
      .acquire(key, {
        limit: this.hooks.shareOf(key, limit),
        deadline: Date.now() + forMs,
        signal: abort.signal,
        arrivedAt: 0,
        maxQueue: Number.MAX_SAFE_INTEGER,
        app: DEFAULT_APP,
        uncapped: true,
      })
      .then(
        (permit) => {
          if (this.#others.has(end)) local = permit
          else permit.release()
        },
        () => {}, // its lease ran out before a slot was free
      )
  }

  /** A permit adopted by Redis while the fallback still serves: its local slot becomes its pin, released with it. */
  pinWith(permit: SluicePermit, local: Permit): void {
    this.#pins.set(permit, { abort: new AbortController(), local, done: false })
  }

  /** The permit is released or counted in Redis again: its local slot, if any, is free. */
  unpin(permit: SluicePermit): void {
    const pin = this.#pins.get(permit)
    if (!pin) return
    this.#pins.delete(permit)
    pin.done = true
    if (pin.local) pin.local.release()
    else pin.abort.abort()
  }

  unpinAll(): void {
    for (const permit of [...this.#pins.keys()]) this.unpin(permit)
    for (const end of [...this.#others]) end()
  }

  /** Takes back every ticket still waiting for a local slot, oldest first (Redis is back: they move there). */
  takeWaiting(): Ticket[] {
    const waiting = [...this.#attempts.keys()].sort((a, b) => a.arrivedAt - b.arrivedAt)
    for (const ticket of waiting) {
      const attempt = this.#attempts.get(ticket)!
      attempt.stale = true
      this.#attempts.delete(ticket)
      attempt.abort.abort()
      ticket.leftBackend()
    }
    return waiting
  }

  /** How much the fallback keeps: local waits, pins, permits not counted in Redis (for tests and leaks). */
  size(): { waiting: number; pins: number; unshared: number } {
    return { waiting: this.#attempts.size, pins: this.#pins.size, unshared: this.#unshared.size }
  }

  async localKeys(): Promise<KeyStatus[]> {
    return [...(await this.#local.status()).keys]
  }

  close(): Promise<void> {
    for (const end of [...this.#others]) end()
    return this.#local.close()
  }
}
