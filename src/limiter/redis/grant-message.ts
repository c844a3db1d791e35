/**
 * The messages scripts publish on a replica's grant channel (docs/redis-limiter.md, "Keys": the channel),
 * written once for the Lua and the subscriber. Scripts of the previous release publish the same text
 * (test/deploy/version-skew.test.ts runs them beside these), so the Lua below must not change what it sends.
 */

/** The Lua expression of a grant message, from Lua expressions of the granted id and the head left (false: none). */
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
