import { createHash } from 'node:crypto'
import type { PermitKey } from '../types.js'

/** Redis key names: one hash tag per semaphore, a digest of (instance, endpoint) (docs/redis-limiter.md, "Keys"). */

/** The keys of one semaphore, in the order every script takes them. */
export interface SemaphoreKeys {
  /** the tag alone, as listed in the registry of active semaphores */
  readonly tag: string
  /** ZSET permit id → lease expiry (ms, Redis clock) */
  readonly holders: string
  /** ZSET waiter id → start tag (fair share between apps, see lua-fair.ts): the lowest is next */
  readonly queue: string
  /** HASH limit (the limit argument), instance, endpoint, `@<replica>` → that replica's liveness expiry (ms), `v` and `f:<app>` (lua-fair.ts) */
  readonly meta: string
  /** HASH the learned limit (v, b, c: see lua-common.ts), expiring after `learning.idleMs` unused */
  readonly learned: string
}

/** Keys shared by every semaphore (one slot of their own: `{global}`). */
export interface GlobalKeys {
  /** ZSET replica id → heartbeat expiry (ms): how many replicas share the limits */
  readonly replicas: string
  /** ZSET semaphore tag → expiry (ms): semaphores some replica is using, for `/status` */
  readonly active: string
}

export function tagOf(key: PermitKey): string {
  return createHash('sha1').update(key.instance).update('\0').update(key.endpoint).digest('hex').slice(0, 20)
}

export function semaphoreKeysOf(prefix: string, tag: string): SemaphoreKeys {
  const base = `${prefix}:{${tag}}`
  return { tag, holders: `${base}:holders`, queue: `${base}:queue`, meta: `${base}:meta`, learned: `${base}:learned` }
}

export function globalKeysOf(prefix: string): GlobalKeys {
  return { replicas: `${prefix}:{global}:replicas`, active: `${prefix}:{global}:active` }
}

/** The pub/sub channel of one replica is `<grantChannelPrefix><replicaId>`; scripts publish grants to it. */
export function grantChannelPrefix(prefix: string): string {
  return `${prefix}:grant:`
}

/** The four semaphore keys in script order (KEYS[1..4]). */
export function keyList(keys: SemaphoreKeys): [string, string, string, string] {
  return [keys.holders, keys.queue, keys.meta, keys.learned]
}

/** The scripts' limit argument: "<n>" fixed, or "<start> <ceiling> <floor> <idleMs>" learned (docs/redis-limiter.md, "Keys"). */
export function limitArg(options: {
  readonly limit: number
  readonly learn?: { readonly ceiling: number; readonly floor: number; readonly idleMs: number } | undefined
}): string {
  const learn = options.learn
  return learn === undefined
    ? String(options.limit)
    : `${options.limit} ${learn.ceiling} ${learn.floor} ${learn.idleMs}`
}

/** Whether a limit argument is a learned limit's bounds (four numbers) rather than a fixed limit (`limitArg`). */
export const learnsFrom = (arg: string): boolean => arg.includes(' ')
