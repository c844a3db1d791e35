import type { PermitKey } from '../types.js'
import { acquire, type AcquireArgs, type AcquireReply } from './acquire/index.js'
import { adopt } from './adopt/index.js'
import type { SemaphoreKeys } from './keys.js'
import { release, type ReleaseArgs, type ReleaseResult } from './release/index.js'
import { renew } from './renew/index.js'
import { reuse } from './reuse/index.js'
import type { RunOptions, ScriptRunner } from './script.js'
import { sync, type SyncArgs, type SyncReply } from './sync/index.js'

/** What every script of this replica is sent with, whatever the key. */
export interface ReplicaConstants {
  readonly replicaId: string
  readonly channelPrefix: string
  readonly leaseMs: number
  /** how long a replica's waiters stay in the queue without it renewing its liveness */
  readonly liveMs: number
  /** an untouched semaphore's keys expire after this */
  readonly idleMs: number
  /** redis.keepPermits: permits may be kept, so an acquire queued alone tells the holders' replicas (acquire/lua.ts) */
  readonly keepPermits?: boolean
}

/** The semaphore a script is for: its keys, the limit argument in force, and the key its meta hash describes. */
export interface ScriptTarget {
  readonly key: PermitKey
  readonly keys: SemaphoreKeys
  readonly arg: string
}

/** The semaphore scripts with this replica's constants, keys and limit filled in (argument lists: `<operation>/index.ts`). */
export class ReplicaScripts {
  constructor(
    readonly runner: ScriptRunner,
    readonly replica: ReplicaConstants,
  ) {}

  // (object literals of one shape, not spreads: these two run for every request)
  acquire(
    sem: ScriptTarget,
    a: Pick<AcquireArgs, 'id' | 'ageMs' | 'full' | 'announce' | 'announcedBefore' | 'wantHead' | 'cost'>,
    options?: RunOptions,
  ): Promise<AcquireReply> {
    const r = this.replica
    return acquire(
      this.runner,
      sem.keys,
      {
        id: a.id,
        replicaId: r.replicaId,
        limit: sem.arg,
        leaseMs: r.leaseMs,
        liveMs: r.liveMs,
        idleMs: r.idleMs,
        ageMs: a.ageMs,
        full: a.full,
        announce: a.announce,
        announcedBefore: a.announcedBefore === true,
        instance: sem.key.instance,
        endpoint: sem.key.endpoint,
        channelPrefix: r.channelPrefix,
        wantHead: a.wantHead,
        cost: a.cost,
        tellAlone: r.keepPermits === true,
      },
      options,
    )
  }

  release(sem: ScriptTarget, a: Pick<ReleaseArgs, 'ids' | 'wantHead' | 'answer' | 'served'>): Promise<ReleaseResult> {
    const r = this.replica
    return release(this.runner, sem.keys, {
      ids: a.ids,
      limit: sem.arg,
      leaseMs: r.leaseMs,
      idleMs: r.idleMs,
      channelPrefix: r.channelPrefix,
      replicaId: r.replicaId,
      wantHead: a.wantHead,
      answer: a.answer,
      served: a.served,
    })
  }

  /** A kept permit confirmed for a new request, or released (reuse/lua.ts). */
  reuse(sem: ScriptTarget, id: string): Promise<{ readonly reused: boolean; readonly limit: number | undefined }> {
    const { leaseMs, idleMs, channelPrefix } = this.replica
    return reuse(this.runner, sem.keys, { id, limit: sem.arg, leaseMs, idleMs, channelPrefix })
  }

  renew(sem: ScriptTarget, id: string): Promise<boolean> {
    return renew(this.runner, sem.keys, { id, leaseMs: this.replica.leaseMs, idleMs: this.replica.idleMs })
  }

  sync(
    sem: ScriptTarget,
    a: Pick<
      SyncArgs,
      | 'held'
      | 'waiting'
      | 'drop'
      | 'sweep'
      | 'recount'
      | 'expectEpoch'
      | 'epoch'
      | 'reconcile'
      | 'keep'
      | 'below'
      | 'sure'
    >,
  ): Promise<SyncReply> {
    const { replicaId, leaseMs, liveMs, idleMs, channelPrefix } = this.replica
    const { instance, endpoint } = sem.key
    return sync(this.runner, sem.keys, {
      ...a,
      replicaId,
      limit: sem.arg,
      instance,
      endpoint,
      leaseMs,
      liveMs,
      idleMs,
      channelPrefix,
    })
  }

  adopt(sem: ScriptTarget, ids: readonly string[]): Promise<number> {
    const { replicaId, leaseMs, liveMs, idleMs } = this.replica
    const { instance, endpoint } = sem.key
    return adopt(this.runner, sem.keys, { replicaId, limit: sem.arg, leaseMs, liveMs, idleMs, instance, endpoint, ids })
  }
}
