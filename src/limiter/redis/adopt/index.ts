import { keyList, type SemaphoreKeys } from '../keys.js'
import type { ScriptDef, ScriptRunner } from '../script.js'
import { ADOPT_LUA } from './lua.js'

export const ADOPT_SCRIPT: ScriptDef = { name: 'adopt', numberOfKeys: 4, lua: ADOPT_LUA }

export interface AdoptArgs {
  readonly replicaId: string
  /** the limit argument (see limitArg) */
  readonly limit: string
  readonly leaseMs: number
  readonly liveMs: number
  readonly idleMs: number
  readonly instance: string
  readonly endpoint: string
  readonly ids: readonly string[]
}

/** Registers in-flight permits granted without Redis as holders; resolves with the holder count. */
export async function adopt(scripts: ScriptRunner, keys: SemaphoreKeys, a: AdoptArgs): Promise<number> {
  const reply = await scripts.run(ADOPT_SCRIPT, keyList(keys), [
    a.replicaId,
    a.limit,
    a.leaseMs,
    a.liveMs,
    a.idleMs,
    a.instance,
    a.endpoint,
    ...a.ids,
  ])
  return Number(reply)
}
