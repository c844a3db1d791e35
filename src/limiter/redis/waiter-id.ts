/**
 * Permit and waiter ids: `<replica>/<arrived>~<sequence>:<cap>:<app>` (base 36 numbers, `arrived`
 * nine digits wide, `sequence` eight). The part before the last `/` is exactly the replica id, as in
 * the older form `<replica>/<sequence>`: it says where to publish a grant and whose liveness keeps
 * a waiter queued, and scripts of the previous release (which read it with `^(.*)/`) still find it
 * during a rolling upgrade (docs/deploy.md). The rest carries what a script needs to know about the
 * waiter without another read (docs/redis-limiter.md, "Fair share between apps"): its app (per-app
 * counts for `/status`, and its cap), the app's cap of held permits (empty: none), and when the
 * request arrived on the replica's wall clock (`/status`'s oldest wait). The `~` marks the new
 * form: a score of an id without it is an arrival time of the previous release, never a start tag.
 * Waiters whose start tags are equal are ordered by member (a sorted set's rule): by replica id,
 * then — fixed-width — by arrival and sequence, so one replica's waiters keep their order. Order
 * within an app never depends on it (its tags strictly increase). App names have no `/`, `:`, `~`
 * or white space (apps/settings.ts).
 */

export interface WaiterIdParts {
  readonly replicaId: string
  readonly sequence: number
  /** ms since epoch, the replica's clock */
  readonly arrivedAt: number
  /** most permits the app may hold on the key; Infinity: no cap */
  readonly maxHeld: number
  readonly app: string
}

export function waiterId(p: WaiterIdParts): string {
  const cap = Number.isFinite(p.maxHeld) ? p.maxHeld.toString(36) : ''
  const arrived = Math.max(0, Math.floor(p.arrivedAt)).toString(36).padStart(9, '0')
  const sequence = p.sequence.toString(36).padStart(8, '0')
  return `${p.replicaId}/${arrived}~${sequence}:${cap}:${p.app}`
}

/**
 * Ids of one replica, numbered in order: `next(policy, arrivedAt)` carries the app, its cap and the
 * arrival, which the scripts read there.
 */
export function waiterIds(replicaId: string): (policy: { readonly app: string; readonly maxHeld: number }, arrivedAt: number) => string {
  let sequence = 0
  return (policy, arrivedAt) => waiterId({ replicaId, sequence: ++sequence, arrivedAt, maxHeld: policy.maxHeld, app: policy.app })
}

/** The app an id names; undefined for an id of the older form `<replica>/<sequence>`. */
export function appOfId(id: string): string | undefined {
  const slash = id.lastIndexOf('/')
  const colon = id.lastIndexOf(':')
  return colon > slash ? id.slice(colon + 1) : undefined
}

/**
 * The same reading in Lua, pasted into the scripts (lua-common.ts). An id of the older form
 * `<replica>/<sequence>` is the app `default` with no cap and no known arrival.
 */
export const LUA_WAITER_ID = `
local function replica_of(id)
  return string.match(id, '^(.*)/')
end

-- an id of the older form (the previous release's): its score is an arrival time, not a start tag
local function is_old_form(id)
  return string.match(id, '/[^/]*~[^/]*$') == nil
end

local function app_of(id)
  return string.match(id, '/[^/]*:([^:/]*)$') or 'default'
end

local function cap_of(id)
  local c = string.match(id, '/[^/]*:(%w*):[^:/]*$')
  if c == nil or c == '' then return nil end
  return tonumber(c, 36)
end

-- when the request arrived (ms, the replica's clock), nil for an id of the older form
local function arrived_of(id)
  local t = string.match(id, '/(%w+)~[^/]*$')
  if t == nil then return nil end
  return tonumber(t, 36)
end
`
