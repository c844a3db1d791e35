import type { SyncSent } from './semaphore-types.js'

/** Every 30th sync also clears dead replicas' liveness fields from the meta hash (it reads the whole hash). */
const SWEEP_EVERY = 30

/** Epochs a sync writes: unique in this process, so a state older than a key's last sync never holds the one expected. */
let epochs = 0

/** What a key's next sync is sent with that the book decides. */
export type SyncMarks = Pick<SyncSent, 'drop' | 'recount' | 'sweep' | 'expectEpoch' | 'epoch' | 'reconcile'>

/**
 * One key's sync bookkeeping (docs/redis-limiter.md, "Failure modes"): the ids to give back once Redis
 * answers, whether the next sync counts held permits again or reconciles, the epoch the last sync
 * wrote, and the sync running. Part of KeySemaphore, which alone calls it.
 */
export class SyncBook {
  /** ids to release or withdraw once Redis answers again (made when first needed: most keys never have any) */
  #drops: Set<string> | undefined
  /** a script found that Redis no longer knew this replica (it lost its data): the next sync counts held permits again */
  #recount = false
  /** Redis may be another server or an older state (a reconnect): the next sync removes this replica's ghosts */
  #reconcile = false
  /** the epoch the last sync wrote ('' when not known: none yet, or the sync failed) */
  #epoch = ''
  #syncing: Promise<void> | undefined
  #syncs = 0

  get hasDrops(): boolean {
    return (this.#drops?.size ?? 0) > 0
  }

  get syncing(): boolean {
    return this.#syncing !== undefined
  }

  get reconciling(): boolean {
    return this.#reconcile
  }

  dropLater(ids: readonly string[]): void {
    if (ids.length === 0) return
    this.#drops ??= new Set()
    for (const id of ids) this.#drops.add(id)
  }

  undrop(ids: readonly string[]): void {
    for (const id of ids) this.#drops?.delete(id)
  }

  forgetDrops(): void {
    this.#drops = undefined
    this.#reconcile = false // nor can its keys be reconciled: kept, the broken key would be synced in vain forever
  }

  once(run: () => Promise<void>, done: () => void): Promise<void> {
    this.#syncing ??= run().finally(() => {
      this.#syncing = undefined
      done()
    })
    return this.#syncing
  }

  /** A sync goes out now: the ids to drop leave the book (back with `dropLater` if it fails). */
  take(): SyncMarks {
    const drop = this.#drops === undefined ? [] : [...this.#drops]
    this.#drops = undefined
    const sweep = this.#syncs++ % SWEEP_EVERY === 0
    return {
      drop,
      recount: this.#recount,
      sweep,
      expectEpoch: this.#epoch,
      epoch: `${++epochs}`,
      reconcile: this.#reconcile,
    }
  }

  /** A script found that Redis no longer knew this replica: the next sync counts held permits again. */
  forgotten(): void {
    this.#recount = true
  }

  mayHaveMoved(): void {
    this.#reconcile = true
    this.#recount = true
  }

  failed(): void {
    this.#epoch = ''
  }

  synced(sent: SyncMarks, forgot: boolean): void {
    if (sent.recount) this.#recount = false
    if (sent.reconcile) this.#reconcile = false
    this.#epoch = sent.epoch
    // It found Redis had lost its data: a grant made before the loss but read after this sync went
    // out was not in its list, so the next sync counts again too (once: that one finds us known).
    if (forgot) this.#recount = true
  }
}
