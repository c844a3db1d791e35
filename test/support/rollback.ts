import type { Redis } from 'ioredis'

/** What a snapshot held of each key: its serialised value and time to live. */
export type Snapshot = ReadonlyMap<string, { readonly dump: Buffer; readonly pttl: number }>

/**
 * Every key under `prefix` as it is now (DUMP): what a replica promoted by a failover, or a server
 * restarted from an RDB taken now, would hold later.
 */
export async function snapshot(client: Redis, prefix: string): Promise<Snapshot> {
  const taken = new Map<string, { dump: Buffer; pttl: number }>()
  for (const key of await client.keys(`${prefix}:*`)) {
    const dump = await client.dumpBuffer(key)
    if (dump !== null) taken.set(key, { dump, pttl: Math.max(0, await client.pttl(key)) })
  }
  return taken
}

/**
 * Puts Redis's state under `prefix` back to `taken` (keys made since are deleted), in one MULTI: the
 * state went back in time at once, as after a failover to a replica that had not caught up.
 */
export async function rollBack(client: Redis, prefix: string, taken: Snapshot): Promise<void> {
  const tx = client.multi()
  for (const key of await client.keys(`${prefix}:*`)) tx.del(key)
  for (const [key, { dump, pttl }] of taken) tx.restore(key, pttl, dump, 'REPLACE')
  await tx.exec()
}
