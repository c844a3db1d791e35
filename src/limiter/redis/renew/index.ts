import type { SemaphoreKeys } from '../keys.js'
import type { ScriptDef, ScriptRunner } from '../script.js'
import { RENEW_LUA } from './lua.js'

export const RENEW_SCRIPT: ScriptDef = { name: 'renew', numberOfKeys: 1, lua: RENEW_LUA }

/** Renews one permit's lease if Redis still counts it; false when it was purged (lost). */
export async function renew(
  scripts: ScriptRunner,
  keys: SemaphoreKeys,
  a: { id: string; leaseMs: number; idleMs: number },
): Promise<boolean> {
  return Number(await scripts.run(RENEW_SCRIPT, [keys.holders], [a.leaseMs, a.idleMs, a.id])) === 1
}
