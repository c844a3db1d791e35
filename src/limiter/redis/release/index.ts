import { keyList, type SemaphoreKeys } from '../keys.js'
import type { ScriptDef, Scripts } from '../script.js'
import { RELEASE_LUA } from './lua.js'

export const RELEASE_SCRIPT: ScriptDef = { name: 'release', numberOfKeys: 3, lua: RELEASE_LUA }

export interface ReleaseArgs {
  /** permit or waiter ids of one semaphore */
  readonly ids: readonly string[]
  readonly limit: number
  readonly leaseMs: number
  readonly idleMs: number
  readonly channelPrefix: string
}

/** Releases holders / withdraws waiters; resolves with how many of the ids Redis still knew. */
export async function release(scripts: Scripts, keys: SemaphoreKeys, a: ReleaseArgs): Promise<number> {
  const reply = await scripts.run(RELEASE_SCRIPT, keyList(keys), [a.limit, a.leaseMs, a.idleMs, a.channelPrefix, ...a.ids])
  return Number(reply)
}
