/**
 * Permit and waiter ids: `<replica>/<arrived>~<sequence>:<cap>:<app>` (docs/redis-limiter.md, "Keys"; ordering
 * of equal tags: "Ties and precision"). App names have no `/`, `:`, `~` or white space (apps/settings.ts).
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
export function waiterIds(replicaId: string): ((
  policy: { readonly app: string; readonly maxHeld: number },
  arrivedAt: number,
) => string) & {
  readonly next: () => string
} {
  let sequence = 0
  const make = (policy: { readonly app: string; readonly maxHeld: number }, arrivedAt: number): string =>
    waiterId({ replicaId, sequence: ++sequence, arrivedAt, maxHeld: policy.maxHeld, app: policy.app })
  // the sequence the next id will carry, as the ids write it: ids made before compare below it (sync's reconciliation)
  return Object.assign(make, { next: () => (sequence + 1).toString(36).padStart(8, '0') })
}

/** The app an id names; undefined for an id without one (neither this code nor the previous release writes such). */
export function appOfId(id: string): string | undefined {
  const slash = id.lastIndexOf('/')
  const colon = id.lastIndexOf(':')
  return colon > slash ? id.slice(colon + 1) : undefined
}

/**
 * The same reading in Lua, pasted into the scripts (lua-common.ts). Only this form is read: the previous
 * release (CHANGELOG.md) writes it too, and older ones are not supported (docs/deploy.md, "Version skew").
 */
export const LUA_WAITER_ID = `
local function replica_of(id)
  return string.match(id, '^(.*)/')
end

local function app_of(id)
  return string.match(id, '/[^/]*:([^:/]*)$') or 'default'
end

local function cap_of(id)
  local c = string.match(id, '/[^/]*:(%w*):[^:/]*$')
  if c == nil or c == '' then return nil end
  return tonumber(c, 36)
end

-- when the request arrived (ms, the replica's clock), nil for an id that does not say
local function arrived_of(id)
  local t = string.match(id, '/(%w+)~[^/]*$')
  if t == nil then return nil end
  return tonumber(t, 36)
end
`
