import type { AppShare, KeyStatus } from '../../types.js'
import { keyList, type GlobalKeys, type SemaphoreKeys } from '../keys.js'
import { stringsOf, type ScriptDef, type ScriptRunner } from '../script.js'
import { ACTIVE_LUA, STATUS_LUA } from './lua.js'

export const STATUS_SCRIPT: ScriptDef = { name: 'status', numberOfKeys: 4, lua: STATUS_LUA }
export const ACTIVE_SCRIPT: ScriptDef = { name: 'active', numberOfKeys: 1, lua: ACTIVE_LUA }

/** One semaphore as `/status` shows it: the limiter interface's KeyStatus. */
export type SemaphoreStatus = KeyStatus

/** Live holders and waiters of one semaphore, across every replica. */
export async function semaphoreStatus(scripts: ScriptRunner, keys: SemaphoreKeys, idleMs: number): Promise<SemaphoreStatus> {
  const r = (await scripts.run(STATUS_SCRIPT, keyList(keys), [idleMs])) as [number, number, number, number, string, string, unknown, string | null | undefined, number | null | undefined]
  const flat = Array.isArray(r[6]) ? (r[6] as unknown[]) : []
  const apps: AppShare[] = []
  for (let i = 0; i + 2 < flat.length; i += 3) apps.push({ app: String(flat[i]), held: Number(flat[i + 1]), queued: Number(flat[i + 2]) })
  return {
    inFlight: Number(r[0]),
    queued: Number(r[1]),
    oldestWaitMs: Number(r[2]),
    limit: Number(r[3]),
    instance: String(r[4]),
    endpoint: String(r[5]),
    apps,
    ...(typeof r[7] === 'string' ? { learned: { value: Number(r[7]), ceiling: Number(r[8]) } } : {}),
  }
}

/** Tags of the semaphores any live replica is using. */
export async function activeTags(scripts: ScriptRunner, keys: GlobalKeys): Promise<string[]> {
  return stringsOf(await scripts.run(ACTIVE_SCRIPT, [keys.active], []))
}
