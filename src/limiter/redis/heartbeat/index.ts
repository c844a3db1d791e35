import type { GlobalKeys } from '../keys.js'
import { stringsOf, type ScriptDef, type ScriptRunner } from '../script.js'
import { HEARTBEAT_LUA } from './lua.js'

export const HEARTBEAT_SCRIPT: ScriptDef = { name: 'heartbeat', numberOfKeys: 2, lua: HEARTBEAT_LUA }

export interface HeartbeatArgs {
  readonly replicaId: string
  readonly ttlMs: number
  /** remove this replica from the registry (on close) */
  readonly leave: boolean
  /** tags of the semaphores this replica holds permits of or has waiters for */
  readonly activeTags: readonly string[]
}

/** Resolves with the ids of the live replicas (the `local` fallback's shares follow them: local-share.ts). */
export async function heartbeat(scripts: ScriptRunner, keys: GlobalKeys, a: HeartbeatArgs): Promise<string[]> {
  const reply = await scripts.run(
    HEARTBEAT_SCRIPT,
    [keys.replicas, keys.active],
    [a.replicaId, a.ttlMs, a.leave ? '1' : '0', ...a.activeTags],
  )
  return stringsOf(reply)
}
