import { createHash } from 'node:crypto'
import type { PermitKey } from '../types.js'

/**
 * This replica's share of a key's limit in the `local` fallback (docs/redis-limiter.md, "Failure
 * modes"): the shares of the replicas last seen alive add up to the limit, never more. Each gets
 * floor(limit / n); the remainder (all of a limit below n) goes to the replicas ranked first for
 * this key by a rendezvous hash of (key, replica id), so every replica with the same list computes
 * the same owners, and the keys' remainders spread over the replicas. A replica whose share is 0
 * queues its requests until Redis is back (or their deadline).
 */
export function localShare(limit: number, key: PermitKey, self: string, alive: readonly string[]): number {
  const replicas = alive.includes(self) ? alive : [...alive, self]
  const n = replicas.length
  const remainder = limit % n
  const base = (limit - remainder) / n
  if (remainder === 0) return base
  const score = (id: string): number =>
    createHash('sha1').update(`${key.instance}\n${key.endpoint}\n${id}`).digest().readUInt32BE(0)
  const mine = score(self)
  // how many replicas rank ahead of this one (a higher score, or the same and a smaller id)
  let ahead = 0
  for (const id of replicas) {
    if (id === self) continue
    const s = score(id)
    if (s > mine || (s === mine && id < self)) ahead++
  }
  return base + (ahead < remainder ? 1 : 0)
}
