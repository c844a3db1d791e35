import { keyList, type SemaphoreKeys } from '../keys.js'
import type { ScriptDef, ScriptRunner } from '../script.js'
import { RELEASE_LUA } from './lua.js'

export const RELEASE_SCRIPT: ScriptDef = { name: 'release', numberOfKeys: 3, lua: RELEASE_LUA }

export interface ReleaseArgs {
  /** permit or waiter ids of one semaphore */
  readonly ids: readonly string[]
  readonly limit: number
  readonly leaseMs: number
  readonly idleMs: number
  readonly channelPrefix: string
  /** name the waiter left at the head in the reply (the releasing replica holds every permit of the key) */
  readonly wantHead: boolean
  /** the ids are waiters a handover served: their start tags move the virtual time (implies wantHead) */
  readonly served?: boolean
}

export interface ReleaseResult {
  /** how many of the ids Redis still knew */
  readonly found: number
  /** waiters (of any replica) that the freed slots were handed to */
  readonly granted: readonly string[]
  /** the waiter left at the head of the queue, if any (when asked, or at limit 1) */
  readonly head: string | undefined
}

/** Releases holders / withdraws waiters, and hands the freed slots to the head waiters. */
export async function release(scripts: ScriptRunner, keys: SemaphoreKeys, a: ReleaseArgs): Promise<ReleaseResult> {
  const reply = (await scripts.run(RELEASE_SCRIPT, keyList(keys), [a.limit, a.leaseMs, a.idleMs, a.channelPrefix, a.served === true ? '2' : a.wantHead ? '1' : '0', ...a.ids])) as [number, string[] | undefined, string | null | undefined]
  return { found: Number(reply[0]), granted: reply[1] ?? [], head: reply[2] ?? undefined }
}
