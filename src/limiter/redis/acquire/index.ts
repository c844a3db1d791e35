import { keyList, type SemaphoreKeys } from '../keys.js'
import type { RunOptions, ScriptDef, ScriptRunner } from '../script.js'
import { ACQUIRE_LUA } from './lua.js'

export const ACQUIRE_SCRIPT: ScriptDef = { name: 'acquire', numberOfKeys: 4, lua: ACQUIRE_LUA }

export interface AcquireArgs {
  readonly id: string
  readonly replicaId: string
  /** the limit argument: "<n>" fixed, or a learned limit's bounds (see limitArg) */
  readonly limit: string
  readonly leaseMs: number
  readonly liveMs: number
  readonly idleMs: number
  /** how long ago the request arrived (ms, a duration: immune to clock skew) */
  readonly ageMs: number
  /** this replica already holds its maximum of waiters for the key: refuse rather than queue */
  readonly full: boolean
  /** refresh this replica's liveness and the key's description (new key, changed limit, or a third of a lease since) */
  readonly announce: boolean
  /** this replica announced itself to the key before, so its liveness missing means Redis lost its data (sync/lua.ts reads the mark) */
  readonly announcedBefore?: boolean
  readonly instance: string
  readonly endpoint: string
  readonly channelPrefix: string
  /** say whether the waiter is queued at the head (the replica holds every permit of the key) */
  readonly wantHead: boolean
  /** virtual time one permit costs the waiter's app: 1 / its weight (README "Fair share between apps") */
  readonly cost: number
  /** queued alone at the head, tell the holders' replicas too (redis.keepPermits: one may keep a permit); default no */
  readonly tellAlone?: boolean
}

export type AcquireReply = (
  | { readonly kind: 'granted'; /** its grant found the queue empty (kept-permits.ts) */ readonly quiet: boolean }
  | { readonly kind: 'queued'; readonly head: boolean }
  | { readonly kind: 'full' }
) & {
  /** `announce` found that Redis no longer knew this replica: it lost its data since the last sync */
  readonly forgot: boolean
  /** the limit in force (learned or fixed) */
  readonly limit: number | undefined
  /** queued: the permits Redis counted (every replica's), for the local fallback's share */
  readonly held?: number
}

export async function acquire(
  scripts: ScriptRunner,
  keys: SemaphoreKeys,
  a: AcquireArgs,
  options?: RunOptions,
): Promise<AcquireReply> {
  const reply = (await scripts.run(
    ACQUIRE_SCRIPT,
    keyList(keys),
    [
      a.id,
      a.replicaId,
      a.limit,
      a.leaseMs,
      a.liveMs,
      a.idleMs,
      Math.max(0, Math.round(a.ageMs)),
      a.full ? '1' : '0',
      a.announce ? (a.announcedBefore === true ? '2' : '1') : '0',
      a.instance,
      a.endpoint,
      a.channelPrefix,
      a.wantHead ? '1' : '0',
      // 17 significant digits, as the scripts keep tags (lua-fair.ts)
      a.cost.toPrecision(17),
      a.tellAlone === true ? '1' : '0',
    ],
    options,
  )) as [number, number, number, number | null | undefined, number | undefined]
  const forgot = reply[2] === 1
  const limit = reply[3] == null ? undefined : Number(reply[3])
  if (reply[0] === 1) return { kind: 'granted', quiet: reply[1] === 1, forgot, limit }
  if (reply[0] === 2) return { kind: 'full', forgot, limit }
  const held = reply[4] == null ? undefined : Number(reply[4])
  return { kind: 'queued', head: reply[1] === 1, forgot, limit, held }
}
