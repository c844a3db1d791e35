import { keyList, type SemaphoreKeys } from '../keys.js'
import type { ScriptDef, ScriptRunner } from '../script.js'
import { REUSE_LUA } from './lua.js'

export const REUSE_SCRIPT: ScriptDef = { name: 'reuse', numberOfKeys: 4, lua: REUSE_LUA }

export interface ReuseArgs {
  readonly id: string
  /** the limit argument: "<n>" fixed, or a learned limit's bounds (see limitArg) */
  readonly limit: string
  readonly leaseMs: number
  readonly idleMs: number
  readonly channelPrefix: string
}

/** Confirms a kept permit for a new request (reuse/lua.ts): true when it serves it, with the limit in force. */
export async function reuse(
  scripts: ScriptRunner,
  keys: SemaphoreKeys,
  a: ReuseArgs,
): Promise<{ readonly reused: boolean; readonly limit: number | undefined }> {
  const reply = (await scripts.run(REUSE_SCRIPT, keyList(keys), [
    a.id,
    a.limit,
    a.leaseMs,
    a.idleMs,
    a.channelPrefix,
  ])) as [number, number | null | undefined]
  return { reused: reply[0] === 1, limit: reply[1] == null ? undefined : Number(reply[1]) }
}
