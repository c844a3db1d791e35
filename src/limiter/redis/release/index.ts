import { keyList, type SemaphoreKeys } from '../keys.js'
import type { ScriptDef, ScriptRunner } from '../script.js'
import { RELEASE_LUA } from './lua.js'

// urgent: the freed permit's next holder is waiting for this write (see Scripts)
export const RELEASE_SCRIPT: ScriptDef = { name: 'release', numberOfKeys: 4, lua: RELEASE_LUA, urgent: true }

export interface ReleaseArgs {
  /** permit or waiter ids of one semaphore */
  readonly ids: readonly string[]
  /** the limit argument (see limitArg) */
  readonly limit: string
  readonly leaseMs: number
  readonly idleMs: number
  readonly channelPrefix: string
  /** the releasing replica: its waiters granted by this release are granted from the reply, with no message */
  readonly replicaId: string
  /** name the waiter left at the head in the reply (the releasing replica holds every permit of the key) */
  readonly wantHead: boolean
  /** the ids are waiters a handover served: their start tags move the virtual time (implies wantHead) */
  readonly served?: boolean
  /** what the API answered the request of the permit given back, for a learned limit; none: nothing to learn */
  readonly answer?: { readonly outcome: 'success' | 'throttled'; readonly heldMs: number }
}

export interface ReleaseResult {
  /** how many of the ids Redis still knew */
  readonly found: number
  /** waiters (of any replica) that the freed slots were handed to */
  readonly granted: readonly string[]
  /** the waiter left at the head of the queue, if any (when asked, or at limit 1) */
  readonly head: string | undefined
  /** the limit in force after the release (undefined from a script that did not say) */
  readonly limit: number | undefined
  /** when the answer was learned from: the limit before, the learned value after, the permits held */
  readonly learned: { readonly from: number; readonly value: number; readonly held: number } | undefined
}

/** Releases holders / withdraws waiters, and hands the freed slots to the head waiters. */
export async function release(scripts: ScriptRunner, keys: SemaphoreKeys, a: ReleaseArgs): Promise<ReleaseResult> {
  const answer =
    a.answer === undefined
      ? '-'
      : `${a.answer.outcome === 'success' ? 's' : 't'} ${Math.max(0, Math.round(a.answer.heldMs))}`
  const wantHead = a.served === true ? '2' : a.wantHead ? '1' : '0'
  const reply = (await scripts.run(RELEASE_SCRIPT, keyList(keys), [
    a.limit,
    a.leaseMs,
    a.idleMs,
    a.channelPrefix,
    wantHead,
    answer,
    a.replicaId,
    ...a.ids,
  ])) as [
    number,
    string[] | undefined,
    string | null | undefined,
    number | undefined,
    number | undefined,
    string | null | undefined,
    number | null | undefined,
  ]
  const learned =
    typeof reply[5] === 'string'
      ? { from: Number(reply[4]), value: Number(reply[5]), held: Number(reply[6]) }
      : undefined
  return {
    found: Number(reply[0]),
    granted: reply[1] ?? [],
    head: reply[2] ?? undefined,
    limit: reply[3] == null ? undefined : Number(reply[3]),
    learned,
  }
}
