import type { KeyStatus } from '../../types.js'
import { keyList, type GlobalKeys, type SemaphoreKeys } from '../keys.js'
import { stringsOf, type ScriptDef, type ScriptRunner } from '../script.js'
import { ACTIVE_LUA, STATUS_LUA } from './lua.js'

export const STATUS_SCRIPT: ScriptDef = { name: 'status', numberOfKeys: 4, lua: STATUS_LUA }
export const ACTIVE_SCRIPT: ScriptDef = { name: 'active', numberOfKeys: 1, lua: ACTIVE_LUA }

/** One semaphore as `/status` shows it: the limiter interface's KeyStatus. */
export type SemaphoreStatus = KeyStatus

/** Live holders and waiters of one semaphore, across every replica. */
export async function semaphoreStatus(scripts: ScriptRunner, keys: SemaphoreKeys, idleMs: number): Promise<SemaphoreStatus> {
  const r = (await scripts.run(STATUS_SCRIPT, keyList(keys), [idleMs])) as [number, number, number, number, string, string, string | null | undefined, number | null | undefined]
  return {
    inFlight: Number(r[0]),
    queued: Number(r[1]),
    oldestWaitMs: Number(r[2]),
    limit: Number(r[3]),
    instance: String(r[4]),
    endpoint: String(r[5]),
    ...(typeof r[6] === 'string' ? { learned: { value: Number(r[6]), ceiling: Number(r[7]) } } : {}),
  }
}

/** Tags of the semaphores any live replica is using. */
export async function activeTags(scripts: ScriptRunner, keys: GlobalKeys): Promise<string[]> {
  return stringsOf(await scripts.run(ACTIVE_SCRIPT, [keys.active], []))
}
