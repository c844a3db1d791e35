import type { LeftHere } from './held-permits.js'
import type { KeySemaphore } from './key-semaphore.js'
import type { ReplicaScripts } from './replica-scripts.js'
import { isKeyError } from './script.js'
import type { Semaphores } from './semaphores.js'
import type { SharedHooks } from './shared-types.js'
import type { SyncReply } from './sync/index.js'
import type { Waiting } from './waiting.js'

export interface SyncLoopDeps {
  readonly scripts: ReplicaScripts
  readonly semaphores: Semaphores
  readonly hooks: SharedHooks
  readonly now: () => number
  /** ends waits the reply decides, and gives ids back to Redis */
  readonly waiting: Pick<Waiting, 'grant' | 'requeue' | 'giveBack'>
  /** the sequence of the next id this replica makes (waiter-id.ts): a reconciliation spares the ids from it on */
  readonly nextSequence?: () => string
  /** just before a sync of the key goes out: a kept permit joins its drops (kept-permits.ts) */
  readonly beforeSync?: (sem: KeySemaphore) => void
}

const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)))

/** The safety net under every wait and lease: one sync per busy semaphore every third of a lease (docs/redis-limiter.md, "Scripts", `sync`). */
export class SyncLoop {
  readonly #d: SyncLoopDeps
  readonly #leaseMs: number

  constructor(deps: SyncLoopDeps) {
    this.#d = deps
    this.#leaseMs = deps.scripts.replica.leaseMs
  }

  /**
   * Syncs every semaphore this replica has something in. Rejects with the first failure that means
   * Redis is unreachable; a broken key is reported (hooks.keyBroken) and does not fail the rest.
   */
  async syncAll(): Promise<void> {
    this.#d.semaphores.reviveRecent()
    this.#d.semaphores.forgetIdle()
    const busy = this.#d.semaphores.all().filter((s) => s.isBusy())
    const results = await Promise.allSettled(busy.map((s) => this.syncState(s)))
    let unreachable: Error | undefined
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') return
      if (isKeyError(r.reason)) this.#syncFailed(busy[i]!, r.reason)
      else unreachable ??= asError(r.reason)
    })
    if (unreachable !== undefined) throw unreachable
  }

  /** Renews, flushes and checks one semaphore (one sync at a time per key). Rejects when Redis fails. */
  syncState(sem: KeySemaphore): Promise<void> {
    return sem.syncOnce(
      () => this.#sync(sem),
      () => this.#d.semaphores.collect(sem),
    )
  }

  async #sync(sem: KeySemaphore): Promise<void> {
    this.#d.beforeSync?.(sem)
    const sent = sem.syncSent(this.#d.now())
    let reply: SyncReply
    try {
      reply = await this.#d.scripts.sync(sem, {
        held: sent.renewing,
        waiting: sent.waiting,
        drop: sent.drop,
        sweep: sent.sweep,
        recount: sent.recount,
        expectEpoch: sent.expectEpoch,
        epoch: sent.epoch,
        reconcile: sent.reconcile,
        keep: sent.keep,
        below: this.#d.nextSequence?.() ?? '',
        sure: sent.sure,
      })
    } catch (err) {
      sem.syncFailed()
      sem.dropLater(sent.drop)
      throw err
    }
    const left = sem.synced(sent, reply, {
      lost: reply.lost,
      recounted: reply.recounted,
      // renewed (or counted again) by this script: each lease now lasts at least a lease from when it was sent
      leaseUntil: sent.sentAt + this.#leaseMs,
    })
    // the first sign that Redis's state went back (or lost this replica): every key used lately is reconciled
    if (reply.forgot && !sent.reconcile) this.#d.semaphores.mayHaveMoved()
    for (const permit of left.lost) this.#d.hooks.lost(permit)
    if (reply.recounted.length > 0) this.#recounted(sem, reply.recounted.length, left.unsent)
    if (reply.ghosts > 0) this.#d.hooks.reconciled?.(sem.key, reply.ghosts)
    for (const id of reply.granted) {
      const waiter = sem.queuedWaiter(id)
      if (waiter) this.#d.waiting.grant(waiter)
    }
    const missing = new Set(reply.missing)
    sem.stillQueued(sent.waiting, missing, sent.sentAt)
    for (const id of reply.missing) {
      // Dropped from the queue while this replica looked dead (a long stall), or Redis lost its
      // data: queued again, same age.
      const waiter = sem.queuedWaiter(id)
      if (waiter) this.#d.waiting.requeue(waiter)
    }
    if (sem.hasQueued && reply.nearestExpiryMs >= 0) {
      sem.armSafety(reply.nearestExpiryMs, this.#d.now(), () => {
        if (sem.hasQueued) this.syncState(sem).catch((err: unknown) => this.#syncFailed(sem, err))
      })
    }
  }

  /** Redis lost its data and the sync counted these again: one not sent yet is lost and leaves `holders` now (docs/redis-limiter.md, "Failure modes"). */
  #recounted(sem: KeySemaphore, counted: number, unsent: LeftHere['unsent']): void {
    for (const { permit } of unsent) this.#d.hooks.lost(permit)
    // said also when every one was unsent: the loss of Redis's data is news whatever it held back
    this.#d.hooks.recounted?.(sem.key, { counted: counted - unsent.length, heldBack: unsent.length })
    if (unsent.length > 0)
      void this.#d.waiting.giveBack(
        sem,
        unsent.map((u) => u.id),
      )
  }

  #syncFailed(sem: KeySemaphore, err: unknown): void {
    if (isKeyError(err)) {
      this.#d.hooks.keyBroken(sem.key, err)
      sem.forgetDrops()
      this.#d.semaphores.collect(sem)
    } else {
      this.#d.hooks.failed(err)
    }
  }
}
