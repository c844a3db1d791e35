import type { GlobalKeys } from '../keys.js'
import type { RegistryReading } from '../local-share.js'
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

/**
 * Resolves with the registry as this heartbeat read it: Redis's time, this replica's last beat as it
 * found it, and each live replica's last beat (its expiry less the lease: one `leaseMs` for all).
 */
export async function heartbeat(scripts: ScriptRunner, keys: GlobalKeys, a: HeartbeatArgs): Promise<RegistryReading> {
  const reply = stringsOf(
    await scripts.run(
      HEARTBEAT_SCRIPT,
      [keys.replicas, keys.active],
      [a.replicaId, a.ttlMs, a.leave ? '1' : '0', ...a.activeTags],
    ),
  )
  const beats = new Map<string, number>()
  for (let i = 2; i + 1 < reply.length; i += 2) beats.set(reply[i]!, Number(reply[i + 1]) - a.ttlMs)
  const before = reply[1] === '' || reply[1] === undefined ? undefined : Number(reply[1]) - a.ttlMs
  return { at: Number(reply[0]), beats, before }
}
