import type { GcraParams, Reservation } from './gcra.js'

/**
 * The rule of a rate whose burst is its whole count (`burst: requests`): a sliding log of the last N
 * starts (docs/redis-limiter.md, "Rates"). N may start at once, and N again a window later — the full
 * allowance of an API that counts N per sliding (or fixed) window — never N + 1 in any window of W.
 * Memory: N start times per key (in Redis, one hash field of N numbers). The Redis script pastes LUA_LOG;
 * test/limiter/rate/sliding-log.test.ts runs both on the same inputs.
 */

/** A reservation on `log` (start times, ascending): at max(now, the hold's end, the N-th latest + W). */
export function logReserve(
  log: readonly number[],
  now: number,
  p: GcraParams,
  maxWaitMs: number,
  holdUntil = 0,
): { readonly reservation: Reservation; readonly log: number[] } {
  const n = p.log ?? 1
  const live = log.filter((t) => t > now - p.windowMs)
  let start = Math.max(now, holdUntil)
  if (live.length >= n) start = Math.max(start, live[live.length - n]! + p.windowMs)
  const delayMs = start - now
  if (delayMs > maxWaitMs) return { reservation: { delayMs, granted: false }, log: live }
  live.push(start)
  live.sort((a, b) => a - b)
  // only the last N can bind a later start
  const kept = live.length > n ? live.slice(live.length - n) : live
  return { reservation: { delayMs, granted: true, tat: start }, log: kept }
}

/** A start taken and not sent, given back: its own entry leaves the log. */
export function logGiveBack(log: readonly number[], taken: number): number[] {
  const at = log.indexOf(taken)
  return at < 0 ? [...log] : [...log.slice(0, at), ...log.slice(at + 1)]
}

/**
 * Starts the API counted that the log may lack: `added` it surely lacks (sent before the rate was known),
 * and at least `used` in all (a spent quota). Put at `now`: they were made by then, never earlier than the
 * API's. Only the last N are kept, as in logReserve.
 */
export function logSync(log: readonly number[], now: number, p: GcraParams, used: number, added: number): number[] {
  const n = p.log ?? 1
  const live = log.filter((t) => t > now - p.windowMs)
  for (let i = 0; i < added; i++) live.push(now)
  while (live.length < Math.min(n, used)) live.push(now)
  live.sort((a, b) => a - b)
  return live.length > n ? live.slice(live.length - n) : live
}

/** ms until the next start free on `log`, 0 when free now. */
export function logNextFreeMs(log: readonly number[], now: number, p: GcraParams): number {
  const n = p.log ?? 1
  const live = log.filter((t) => t > now - p.windowMs)
  return live.length < n ? 0 : Math.max(0, live[live.length - n]! + p.windowMs - now)
}

/** The same rule in Lua: the log a comma-joined string of whole ms (Redis's clock). */
export const LUA_LOG = `
local function log_parse(text, now, window)
  local live = {}
  if text then
    for t in string.gmatch(text, '[^,]+') do
      local v = tonumber(t)
      if v > now - window then live[#live + 1] = v end
    end
  end
  return live
end
local function log_reserve(live, now, window, n, maxwait, holduntil)
  local start = math.max(now, holduntil)
  if #live >= n then start = math.max(start, live[#live - n + 1] + window) end
  local delay = start - now
  if delay > maxwait then return delay, live, 0, start end
  live[#live + 1] = start
  table.sort(live)
  local kept = {}
  for i = math.max(1, #live - n + 1), #live do kept[#kept + 1] = live[i] end
  return delay, kept, 1, start
end
local function log_sync(live, now, n, used, added)
  local all = {}
  for i = 1, #live do all[i] = live[i] end
  for i = 1, added do all[#all + 1] = now end
  while #all < math.min(n, used) do all[#all + 1] = now end
  table.sort(all)
  local kept = {}
  for i = math.max(1, #all - n + 1), #all do kept[#kept + 1] = all[i] end
  return kept
end
local function log_give_back(live, taken)
  for i = 1, #live do
    if live[i] == taken then table.remove(live, i) return live end
  end
  return live
end
`
