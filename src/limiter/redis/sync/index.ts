import { keyList, type SemaphoreKeys } from '../keys.js'
import { stringsOf, type ScriptDef, type ScriptRunner } from '../script.js'
import { SYNC_LUA } from './lua.js'

export const SYNC_SCRIPT: ScriptDef = { name: 'sync', numberOfKeys: 4, lua: SYNC_LUA }

export interface SyncArgs {
  readonly replicaId: string
  /** the limit argument (see limitArg) */
  readonly limit: string
  readonly instance: string
  readonly endpoint: string
  readonly leaseMs: number
  readonly liveMs: number
  readonly idleMs: number
  readonly channelPrefix: string
  /** permits this replica holds: renew their leases */
  readonly held: readonly string[]
  /** waiters this replica has queued: which were granted, which are gone */
  readonly waiting: readonly string[]
  /** ids given up while Redis was unreachable: release or withdraw them */
  readonly drop: readonly string[]
  /** also remove the liveness fields of replicas that are gone (now and then: it reads the whole hash) */
  readonly sweep: boolean
  /** an earlier script found that Redis no longer knew this replica (it lost its data): count held permits again */
  readonly recount: boolean
  /** the epoch this replica's previous sync of the key wrote ('' or absent when unknown: not checked) */
  readonly expectEpoch?: string
  /** the epoch this sync writes */
  readonly epoch?: string
  /** remove this replica's entries that serve no live request here (after a reconnect: Redis may be another server) */
  readonly reconcile?: boolean
  /** ids Redis may have besides `held` and `waiting` (acquires on their way, grants being confirmed), kept by a reconciliation */
  readonly keep?: readonly string[]
  /**
   * the sequence of this replica's next id (waiter-id.ts): a reconciliation removes only ids made before
   * it, so a sync re-sent after NOSCRIPT, run after a later acquire, never takes that acquire's id for a ghost
   */
  readonly below?: string
  /** how many of the first `held` ids have a lease that cannot have run out: one missing means the state went back */
  readonly sure?: number
}

export interface SyncReply {
  /** ms until the nearest lease expires, -1 when nothing is held */
  readonly nearestExpiryMs: number
  readonly lost: readonly string[]
  readonly granted: readonly string[]
  readonly missing: readonly string[]
  /** the waiter left at the head of the queue, if any */
  readonly head: string | undefined
  /** held permits Redis no longer counted because it had lost its data: counted again */
  readonly recounted: readonly string[]
  /** the limit in force (learned or fixed) */
  readonly limit: number | undefined
  /** this script found that Redis had lost this replica (its liveness gone, the mark an acquire left, its epoch gone): it lost its data */
  readonly forgot: boolean
  /** entries of this replica serving no live request that a reconciliation removed */
  readonly ghosts: number
  /** the permits counted after it, every replica's (for the local fallback's share) */
  readonly held: number | undefined
}

export async function sync(scripts: ScriptRunner, keys: SemaphoreKeys, a: SyncArgs): Promise<SyncReply> {
  const reply = (await scripts.run(SYNC_SCRIPT, keyList(keys), [
    a.replicaId,
    a.limit,
    a.leaseMs,
    a.liveMs,
    a.idleMs,
    a.channelPrefix,
    a.instance,
    a.endpoint,
    a.sweep ? '1' : '0',
    a.recount ? '1' : '0',
    a.held.length,
    ...a.held,
    a.waiting.length,
    ...a.waiting,
    a.drop.length,
    ...a.drop,
    a.expectEpoch ?? '',
    a.epoch ?? '',
    a.reconcile === true ? '1' : '0',
    a.keep?.length ?? 0,
    ...(a.keep ?? []),
    a.below ?? '',
    a.sure ?? 0,
  ])) as [
    number,
    unknown,
    unknown,
    unknown,
    string | null | undefined,
    unknown,
    number | undefined,
    number | undefined,
    number | undefined,
    number | undefined,
  ]
  return {
    nearestExpiryMs: Number(reply[0]),
    lost: stringsOf(reply[1]),
    granted: stringsOf(reply[2]),
    missing: stringsOf(reply[3]),
    head: reply[4] ?? undefined,
    recounted: stringsOf(reply[5]),
    limit: reply[6] == null ? undefined : Number(reply[6]),
    forgot: reply[7] === 1,
    ghosts: Number(reply[8] ?? 0),
    held: reply[9] == null ? undefined : Number(reply[9]),
  }
}
