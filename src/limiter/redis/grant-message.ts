/**
 * The messages scripts publish on a replica's grant channel (docs/redis-limiter.md, "How a wait
 * works"), written here once: the Lua that builds them, pasted into the scripts (lua-common.ts's
 * `grant`, acquire/lua.ts), and the reading of them (RedisLimiter's subscriber). Permit ids, waiter
 * ids and tags have no white space (waiter-id.ts, keys.ts), so one space separates the parts:
 *
 *   "<granted id>"           a waiter of the replica is now a holder
 *   "<granted id> <head>"    the same, and `head` is the waiter left at the head of the queue (limit 1)
 *   " <tag>"                 the head the replica may know of for that semaphore is stale
 *
 * Scripts of the previous release publish the same text (a rolling upgrade runs both:
 * test/limiter/redis/fair-rolling-upgrade.test.ts), so the Lua below must not change what it sends.
 */

/**
 * The Lua expression of a grant message, given two Lua expressions: the granted id, and the head
 * left in the queue (false when none is named).
 */
export const luaGrantMessage = (id: string, head: string): string => `${head} and (${id} .. ' ' .. ${head}) or ${id}`

/** The Lua expression of a stale-head message, given a Lua expression of the semaphore's tag. */
export const luaStaleHeadMessage = (tag: string): string => `' ' .. ${tag}`

export type GrantMessage =
  | { readonly kind: 'granted'; readonly id: string; readonly head: string | undefined }
  | { readonly kind: 'stale-head'; readonly tag: string }

export function parseGrantMessage(message: string): GrantMessage {
  const space = message.indexOf(' ')
  if (space === 0) return { kind: 'stale-head', tag: message.slice(1) }
  if (space < 0) return { kind: 'granted', id: message, head: undefined }
  return { kind: 'granted', id: message.slice(0, space), head: message.slice(space + 1) }
}
