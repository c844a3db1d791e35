import { QueueFullError } from '../errors.js'
import type { KeyStatus, PermitKey } from '../types.js'
import { acquire } from './acquire/index.js'
import { adopt } from './adopt/index.js'
import { semaphoreKeysOf, tagOf, type GlobalKeys, type SemaphoreKeys } from './keys.js'
import { release } from './release/index.js'
import type { Scripts } from './script.js'
import { activeTags, semaphoreStatus } from './status/index.js'
import { sync } from './sync/index.js'
import { describeKey, type Grant, type SluicePermit, type Ticket } from './ticket.js'

/** Timings derived from the lease, and names. */
export interface SharedConfig {
  readonly prefix: string
  readonly replicaId: string
  readonly channelPrefix: string
  readonly leaseMs: number
  /** how often the replica renews its leases and liveness */
  readonly syncMs: number
  /** how long a replica's waiters stay in the queue without it renewing its liveness */
  readonly liveMs: number
  /** an untouched semaphore's keys expire after this */
  readonly idleMs: number
}

/** What the shared side asks of the limiter around it. */
export interface SharedHooks {
  makePermit(key: PermitKey, limit: number, grant: Grant, waitedMs: number): SluicePermit
  /** a Redis call failed: Redis is treated as unreachable */
  failed(err: unknown): void
  /** a ticket whose Redis attempt failed must be served by whatever mode is now in force */
  reroute(ticket: Ticket): void
  lost(permit: SluicePermit): void
}

interface Waiter {
  readonly id: string
  readonly ticket: Ticket
  readonly state: KeyState
  /**
   * `deferred`: its acquire script goes out after this turn (see `enqueue`); `sending`: the script
   * is on its way; `queued`: Redis has it in the queue
   */
  phase: 'deferred' | 'sending' | 'queued'
  /** a grant message came before the acquire script's own reply */
  grantedEarly: boolean
  /**
   * A moment (monotonic ms) at which Redis had certainly not granted it yet — when its acquire was
   * sent, or a sync that found it still queued. Its lease, once granted, runs at least until this
   * plus a lease.
   */
  notGrantedAt: number
}

interface HeldPermit {
  readonly permit: SluicePermit
  /** the lease lasts at least until then (monotonic ms): a lower bound from when the grant or the last renewal was sent */
  leaseUntil: number
}

interface KeyState {
  readonly key: PermitKey
  readonly keys: SemaphoreKeys
  limit: number
  /** when this replica last refreshed its liveness and the key's description in Redis (local ms) */
  announcedAt: number
  readonly waiters: Map<string, Waiter>
  queuedCount: number
  readonly held: Map<string, HeldPermit>
  /**
   * The waiter Redis last named as the queue's head (in a reply or a grant message). When it is one
   * of ours, a release here hands the permit to it directly (see `#handOver`).
   */
  headHint: string | undefined
  /** ids to release or withdraw once Redis answers again */
  readonly drops: Set<string>
  safety: NodeJS.Timeout | undefined
  safetyAt: number
  syncing: Promise<void> | undefined
  /** syncs so far: every SWEEP_EVERY-th also clears dead replicas' liveness fields from the meta hash */
  syncs: number
}

const SWEEP_EVERY = 30

/**
 * This replica's side of the shared semaphores: its waiters in the Redis queues, the permits it
 * holds, and the bookkeeping that keeps both true (lease renewal, lost messages, dead holders).
 * Only what must touch Redis does: one script to acquire, one to release, one sync per active
 * semaphore and lease third — never a poll per waiter.
 */
export class SharedPermits {
  readonly #states = new Map<string, KeyState>()
  /** every waiter of this replica by id, for grant messages */
  readonly #waiters = new Map<string, Waiter>()
  /** semaphores used since the last heartbeat, even if idle again by then (for `/status` elsewhere) */
  readonly #touched = new Set<string>()
  #sequence = 0

  constructor(
    private readonly scripts: Scripts,
    private readonly config: SharedConfig,
    private readonly hooks: SharedHooks,
  ) {}

  #nextId(): string {
    return `${this.config.replicaId}/${(++this.#sequence).toString(36)}`
  }

  /** (instance, endpoint) → tag, so the hot path does not hash each time; bounded */
  readonly #tags = new Map<string, string>()

  #tagOf(key: PermitKey): string {
    const text = `${key.instance}\n${key.endpoint}`
    let tag = this.#tags.get(text)
    if (tag === undefined) {
      if (this.#tags.size >= 10_000) this.#tags.clear()
      tag = tagOf(key)
      this.#tags.set(text, tag)
    }
    return tag
  }

  #stateOf(key: PermitKey, limit: number): KeyState {
    const tag = this.#tagOf(key)
    let state = this.#states.get(tag)
    if (!state) {
      state = {
        key: { instance: key.instance, endpoint: key.endpoint },
        keys: semaphoreKeysOf(this.config.prefix, tag),
        limit,
        announcedAt: 0,
        waiters: new Map(),
        queuedCount: 0,
        held: new Map(),
        headHint: undefined,
        drops: new Set(),
        safety: undefined,
        safetyAt: 0,
        syncing: undefined,
        syncs: 0,
      }
      this.#states.set(tag, state)
    }
    this.#touched.add(tag)
    if (state.limit !== limit) {
      state.limit = limit
      state.announcedAt = 0
    }
    return state
  }

  /** Starts a ticket's wait in Redis: granted at once when a slot is free and nobody is ahead. */
  enqueue(ticket: Ticket): void {
    const state = this.#stateOf(ticket.key, ticket.options.limit)
    const waiter: Waiter = { id: this.#nextId(), ticket, state, phase: 'sending', grantedEarly: false, notGrantedAt: 0 }
    state.waiters.set(waiter.id, waiter)
    this.#waiters.set(waiter.id, waiter)
    ticket.withdraw = () => this.#withdraw(waiter)
    const keepAge = ticket.hasWaited
    if (!this.#holdsAll(state)) {
      void this.#sendAcquire(waiter, keepAge)
      return
    }
    waiter.phase = 'deferred'
    // Every permit of the key is held here, so this request can only join the queue: its script
    // goes out after this turn of the event loop. A request handed a permit in this turn (a
    // release's handover) starts first, without waiting behind a write that wakes Redis — on a
    // VM that write alone takes a few tenths of a millisecond.
    setImmediate(() => {
      if (!this.#isCurrent(waiter)) return // withdrawn before Redis heard of it
      waiter.phase = 'sending'
      void this.#sendAcquire(waiter, keepAge)
    })
  }

  /** `keepAge`: place the waiter by its age (it waited before), not by when Redis sees it. */
  async #sendAcquire(waiter: Waiter, keepAge: boolean): Promise<void> {
    const { state, ticket } = waiter
    const sentAt = Date.now()
    waiter.notGrantedAt = performance.now()
    // placed by its age, it may go ahead of the waiter named as head: forget that name
    if (keepAge) state.headHint = undefined
    const announce = sentAt - state.announcedAt >= this.config.syncMs
    let reply
    try {
      reply = await acquire(this.scripts, state.keys, {
        id: waiter.id,
        replicaId: this.config.replicaId,
        limit: ticket.options.limit,
        leaseMs: this.config.leaseMs,
        liveMs: this.config.liveMs,
        idleMs: this.config.idleMs,
        ageMs: keepAge ? ticket.ageMs : 0,
        full: state.queuedCount >= ticket.options.maxQueue,
        announce,
        instance: ticket.key.instance,
        endpoint: ticket.key.endpoint,
        channelPrefix: this.config.channelPrefix,
        wantHead: this.#holdsAll(state),
      })
    } catch (err) {
      if (!this.#isCurrent(waiter)) return
      // The script may or may not have run: withdraw the id once Redis answers again.
      this.#forget(waiter)
      state.drops.add(waiter.id)
      ticket.withdraw = undefined
      this.hooks.failed(err)
      this.hooks.reroute(ticket)
      return
    }
    if (announce) state.announcedAt = Math.max(state.announcedAt, sentAt)
    // Withdrawn meanwhile: the release sent after this acquire on the same connection undoes it.
    if (!this.#isCurrent(waiter)) return
    if (reply.kind === 'granted') {
      this.#grant(waiter)
    } else if (reply.kind === 'full') {
      this.#forget(waiter)
      ticket.withdraw = undefined
      ticket.fail(new QueueFullError(describeKey(ticket.key), state.queuedCount))
    } else {
      waiter.phase = 'queued'
      state.queuedCount++
      if (reply.head) state.headHint = waiter.id
      // the next sync (within a third of a lease) arms the safety timer at the nearest lease expiry
      if (waiter.grantedEarly) this.#grant(waiter)
    }
  }

  /**
   * Every permit of the key is held by this replica: a new request can only queue, and the head
   * Redis names may be ours to hand over.
   */
  #holdsAll(state: KeyState): boolean {
    return state.held.size >= state.limit
  }

  #isCurrent(waiter: Waiter): boolean {
    return this.#waiters.get(waiter.id) === waiter
  }

  #forget(waiter: Waiter): void {
    if (!this.#isCurrent(waiter)) return
    this.#waiters.delete(waiter.id)
    waiter.state.waiters.delete(waiter.id)
    if (waiter.phase === 'queued') waiter.state.queuedCount--
  }

  #withdraw(waiter: Waiter): void {
    if (!this.#isCurrent(waiter)) return
    this.#forget(waiter)
    if (waiter.phase === 'deferred') return // never sent: nothing in Redis to undo
    // Leaves the queue — or, if a grant won the race, gives the permit straight back.
    void this.#release(waiter.state, [waiter.id])
  }

  /**
   * Ends a waiter's wait with the Redis permit `id` — its own id once Redis granted it, or the id of
   * a permit handed over by a release here — whose lease lasts at least until `leaseUntil`.
   */
  #grant(waiter: Waiter, id = waiter.id, leaseUntil = waiter.notGrantedAt + this.config.leaseMs): void {
    this.#forget(waiter)
    const { state, ticket } = waiter
    ticket.withdraw = undefined
    const tag = state.keys.tag
    const taken = ticket.succeed((waitedMs) => {
      const permit = this.hooks.makePermit(state.key, ticket.options.limit, { kind: 'redis', tag, id }, waitedMs)
      state.held.set(id, { permit, leaseUntil })
      return permit
    })
    if (!taken) void this.#release(state, [id])
  }

  /**
   * A message on this replica's grant channel: Redis made one of our waiters a holder, and `head`
   * is the waiter it left at the head of the queue.
   */
  onGrantMessage(id: string, head?: string): void {
    const waiter = this.#waiters.get(id)
    if (!waiter) return // withdrawn: its release/withdraw script takes care of the permit
    waiter.state.headHint = head
    this.#granted(waiter)
  }

  /**
   * Redis made this waiter a holder: it gets its permit now, or once its acquire's reply is in.
   * `leaseUntil`: a better bound of the new lease than the waiter's own, when the caller has one.
   */
  #granted(waiter: Waiter, leaseUntil?: number): void {
    if (waiter.phase === 'sending') waiter.grantedEarly = true
    else this.#grant(waiter, waiter.id, leaseUntil)
  }

  /** A request re-queued by its age went ahead of the head this replica may have been told of. */
  onHeadStale(tag: string): void {
    const state = this.#states.get(tag)
    if (state) state.headHint = undefined
  }

  /** Gives back a permit Redis granted. Never throws; on failure the id is retried on the next sync. */
  releasePermit(permit: SluicePermit): void {
    const grant = permit.grant
    if (grant.kind !== 'redis') return
    const state = this.#states.get(grant.tag)
    const held = state?.held.get(grant.id)
    if (!state || held?.permit !== permit) return // already lost: Redis no longer knows it
    // every permit of the key is ours: no other replica can have released one since Redis named the head
    const holdsAll = this.#holdsAll(state)
    state.held.delete(grant.id)
    if (!(holdsAll && this.#handOver(state, grant.id, held.leaseUntil))) void this.#release(state, [grant.id], holdsAll)
  }

  /**
   * When Redis last named one of our own waiters as the head of the queue, and this replica holds
   * every permit of the key, the permit being released is that waiter's turn: it takes the permit
   * here and now, without the release script's round trip and without the slot ever being free in
   * Redis. Then the waiter leaves the queue in the background (one script).
   *
   * Fair: the queue is first come, first served and newcomers join at its tail, so the named
   * waiter stays the head until a release grants it or it leaves — and with every permit here,
   * no release elsewhere can have granted it. A request re-queued with its age (after an
   * upstream 429) that lands ahead of it makes Redis tell this replica that the head is stale
   * (`onHeadStale`); only if that re-queue and this release cross, within a message's flight,
   * may a handover pass it. Safe: the permit stays counted in Redis all along, and it is handed
   * over only while its lease is sure to last beyond the next renewal (a stalled replica hands
   * over nothing). Should the waiter have been granted anyway (one of our leases ran out and
   * its slot went to it), the background script finds it a holder and gives that slot back to
   * the next head.
   */
  #handOver(state: KeyState, id: string, leaseUntil: number): boolean {
    const hint = state.headHint
    state.headHint = undefined
    const next = hint === undefined ? undefined : state.waiters.get(hint)
    if (next?.phase !== 'queued') return false
    if (leaseUntil - performance.now() < this.config.syncMs) return false
    this.#grant(next, id, leaseUntil)
    // after this turn of the event loop: the request now served starts first, its bookkeeping after
    setImmediate(() => void this.#release(state, [next.id], true))
    return true
  }

  /** `wantHead`: this replica holds every permit of the key, so the head Redis names may be its to hand over */
  async #release(state: KeyState, ids: string[], wantHead = false): Promise<void> {
    const sentAt = performance.now()
    try {
      const { granted, head } = await release(this.scripts, state.keys, {
        ids,
        limit: state.limit,
        leaseMs: this.config.leaseMs,
        idleMs: this.config.idleMs,
        channelPrefix: this.config.channelPrefix,
        wantHead,
      })
      state.headHint = head
      // A slot handed to one of our own waiters needs no round through pub/sub: grant it now (the
      // message that follows finds no waiter and is ignored). Other replicas' ids are not ours.
      for (const id of granted) {
        const waiter = this.#waiters.get(id)
        // granted by this script, so after it was sent
        if (waiter) this.#granted(waiter, sentAt + this.config.leaseMs)
      }
      this.#collect(state)
    } catch (err) {
      for (const id of ids) state.drops.add(id)
      this.hooks.failed(err)
    }
  }

  #armSafety(state: KeyState, delayMs: number): void {
    // A little after the lease ends on Redis's clock, so the holder is expired when we look.
    const at = Date.now() + delayMs + 5
    if (state.safety && state.safetyAt <= at) return
    if (state.safety) clearTimeout(state.safety)
    state.safetyAt = at
    state.safety = setTimeout(() => {
      state.safety = undefined
      if (state.queuedCount > 0) this.syncState(state).catch((err: unknown) => this.hooks.failed(err))
    }, delayMs + 5)
    state.safety.unref()
  }

  /** Renews, flushes and checks one semaphore (see the sync script). Rejects when Redis fails. */
  syncState(state: KeyState): Promise<void> {
    state.syncing ??= this.#sync(state).finally(() => {
      state.syncing = undefined
    })
    return state.syncing
  }

  async #sync(state: KeyState): Promise<void> {
    const waiting = [...state.waiters.values()].filter((w) => w.phase === 'queued').map((w) => w.id)
    const drop = [...state.drops]
    state.drops.clear()
    const renewing = [...state.held.keys()]
    const sentAt = Date.now()
    const sentAtMono = performance.now()
    let reply
    try {
      reply = await sync(this.scripts, state.keys, {
        replicaId: this.config.replicaId,
        limit: state.limit,
        instance: state.key.instance,
        endpoint: state.key.endpoint,
        leaseMs: this.config.leaseMs,
        liveMs: this.config.liveMs,
        idleMs: this.config.idleMs,
        channelPrefix: this.config.channelPrefix,
        held: renewing,
        waiting,
        drop,
        sweep: state.syncs++ % SWEEP_EVERY === 0,
      })
    } catch (err) {
      for (const id of drop) state.drops.add(id)
      throw err
    }
    state.announcedAt = Math.max(state.announcedAt, sentAt)
    state.headHint = reply.head
    for (const id of reply.lost) {
      const held = state.held.get(id)
      if (!held) continue
      state.held.delete(id)
      this.hooks.lost(held.permit)
    }
    // renewed by this script (the lost ones are gone from `held` above): each lease now lasts at
    // least a lease from when it was sent
    for (const id of renewing) {
      const held = state.held.get(id)
      if (held) held.leaseUntil = Math.max(held.leaseUntil, sentAtMono + this.config.leaseMs)
    }
    for (const id of reply.granted) {
      const waiter = state.waiters.get(id)
      if (waiter?.phase === 'queued') this.#grant(waiter)
    }
    const missing = new Set(reply.missing)
    for (const id of waiting) {
      const waiter = state.waiters.get(id)
      if (waiter?.phase === 'queued' && !missing.has(id)) waiter.notGrantedAt = Math.max(waiter.notGrantedAt, sentAtMono)
    }
    for (const id of reply.missing) {
      // Dropped from the queue while this replica looked dead (a long stall): queue again, same age.
      const waiter = state.waiters.get(id)
      if (waiter?.phase !== 'queued') continue
      waiter.phase = 'sending'
      state.queuedCount--
      void this.#sendAcquire(waiter, true)
    }
    if (state.queuedCount > 0 && reply.nearestExpiryMs >= 0) this.#armSafety(state, reply.nearestExpiryMs)
    this.#collect(state)
  }

  /** Syncs every semaphore this replica has something in. Rejects on the first Redis failure. */
  async syncAll(): Promise<void> {
    const busy = [...this.#states.values()].filter((s) => s.held.size > 0 || s.waiters.size > 0 || s.drops.size > 0)
    await Promise.all(busy.map((s) => this.syncState(s)))
  }

  /** Forgets a semaphore this replica no longer uses (its Redis keys expire by themselves). */
  #collect(state: KeyState): void {
    if (state.held.size > 0 || state.waiters.size > 0 || state.drops.size > 0 || state.syncing) return
    if (state.safety) clearTimeout(state.safety)
    state.safety = undefined
    if (this.#states.get(state.keys.tag) === state) this.#states.delete(state.keys.tag)
  }

  /**
   * Redis became unreachable: every waiter leaves the shared side (its id is withdrawn once Redis is
   * back) and is returned, oldest first, to be served by the fallback.
   */
  detachWaiters(): Ticket[] {
    const waiters = [...this.#waiters.values()]
    for (const waiter of waiters) {
      this.#forget(waiter)
      if (waiter.phase !== 'deferred') waiter.state.drops.add(waiter.id)
      waiter.ticket.withdraw = undefined
    }
    for (const state of this.#states.values()) {
      if (state.safety) clearTimeout(state.safety)
      state.safety = undefined
    }
    return waiters.map((w) => w.ticket).sort((a, b) => a.arrivedAt - b.arrivedAt)
  }

  /**
   * Counts in Redis the permits granted without it (fallback `local`/`open`) that are still in
   * flight. `adopted` is called for each one now held in Redis, with the grant it had before.
   */
  async adopt(permits: readonly SluicePermit[], adopted: (permit: SluicePermit, before: Grant) => void): Promise<void> {
    const groups = new Map<string, { state: KeyState; permits: SluicePermit[]; ids: string[] }>()
    for (const permit of permits) {
      if (permit.grant.kind === 'redis' || permit.released) continue
      const state = this.#stateOf(permit.key, permit.limit)
      const group = groups.get(state.keys.tag) ?? { state, permits: [], ids: [] }
      group.permits.push(permit)
      group.ids.push(this.#nextId())
      groups.set(state.keys.tag, group)
    }
    await Promise.all(
      [...groups.values()].map(async ({ state, permits: list, ids }) => {
        // Held in `drops` until adopted, so a failure below never leaves them counted forever.
        for (const id of ids) state.drops.add(id)
        const sentAt = performance.now()
        await adopt(this.scripts, state.keys, {
          replicaId: this.config.replicaId,
          limit: state.limit,
          leaseMs: this.config.leaseMs,
          liveMs: this.config.liveMs,
          idleMs: this.config.idleMs,
          instance: state.key.instance,
          endpoint: state.key.endpoint,
          ids,
        })
        list.forEach((permit, i) => {
          const id = ids[i]!
          if (permit.released) return // released while we adopted it: leave the id in drops
          state.drops.delete(id)
          const before = permit.grant
          permit.grant = { kind: 'redis', tag: state.keys.tag, id }
          state.held.set(id, { permit, leaseUntil: sentAt + this.config.leaseMs })
          adopted(permit, before)
        })
      }),
    )
  }

  /** Every permit this replica holds from Redis. */
  heldPermits(): SluicePermit[] {
    return [...this.#states.values()].flatMap((s) => [...s.held.values()].map((h) => h.permit))
  }

  /** Tags of the semaphores this replica holds permits of or waits for. */
  activeTags(): string[] {
    return [...this.#states.values()].filter((s) => s.held.size > 0 || s.waiters.size > 0).map((s) => s.keys.tag)
  }

  /** Active tags plus those used since the last call: what the next heartbeat announces. */
  takeAnnouncedTags(): string[] {
    const tags = new Set([...this.activeTags(), ...this.#touched])
    this.#touched.clear()
    return [...tags]
  }

  /** Every semaphore any live replica uses, with its global counts, read from Redis. */
  async status(globalKeys: GlobalKeys): Promise<KeyStatus[]> {
    const tags = new Set([...(await activeTags(this.scripts, globalKeys)), ...this.activeTags()])
    const all = await Promise.all(
      [...tags].map((tag) => semaphoreStatus(this.scripts, semaphoreKeysOf(this.config.prefix, tag))),
    )
    return all
      .filter((s) => s.inFlight > 0 || s.queued > 0)
      .map((s) => ({ ...s }))
      .sort((a, b) => a.instance.localeCompare(b.instance) || a.endpoint.localeCompare(b.endpoint))
  }

  /** Clears timers (close). */
  stop(): void {
    for (const state of this.#states.values()) {
      if (state.safety) clearTimeout(state.safety)
      state.safety = undefined
    }
  }
}
