/**
 * The rate rule: GCRA (the generic cell rate algorithm) with reservations, one number of state per key
 * (the theoretical arrival time, TAT). docs/redis-limiter.md, "Rates" says why GCRA and why these
 * parameters; the Redis script pastes LUA_GCRA, test/limiter/rate/gcra-parity.test.ts runs both on the same inputs.
 */

/** A rate as configured or learned: at most `requests` starts in any window of `windowMs`, the first `burst` of them at once. */
export interface Rate {
  readonly requests: number
  readonly windowMs: number
  /** how many may start together after a quiet spell; 1 (the default) spaces every start evenly */
  readonly burst: number
}

/** GCRA's two constants for a rate, whole ms (rounded up: slower, never faster), and what they came from. */
export interface GcraParams {
  /** the window and the starts spaced through it, (requests − burst + 1): the local fallback divides these */
  readonly windowMs: number
  readonly spaced: number
  /** the emission interval: the spacing of starts once the burst is spent */
  readonly intervalMs: number
  /** the tolerance: how far ahead of the TAT a start may go, (burst − 1) intervals */
  readonly toleranceMs: number
  /** N when the burst is the whole count: the rule is a sliding log of the last N starts (sliding-log.ts) */
  readonly log?: number
}

/**
 * With burst B and interval T = W / (N − B + 1), any window of W holds at most (N − B + 1) + (B − 1) = N
 * starts: exact for a sliding window, and so for a fixed one (docs/redis-limiter.md, "Rates").
 */
export function gcraParams(rate: Rate): GcraParams {
  const burst = Math.min(Math.max(1, rate.burst), rate.requests)
  // burst = requests: N at once and N again a window later (a sliding log), not N then one per window
  if (burst === rate.requests && burst > 1) {
    const intervalMs = Math.ceil(rate.windowMs / rate.requests)
    return { windowMs: rate.windowMs, spaced: rate.requests, intervalMs, toleranceMs: 0, log: rate.requests }
  }
  const spaced = rate.requests - burst + 1
  const intervalMs = Math.ceil(rate.windowMs / spaced)
  return { windowMs: rate.windowMs, spaced, intervalMs, toleranceMs: (burst - 1) * intervalMs }
}

/** The stricter of two: the longer interval, the smaller tolerance (a learned rate never loosens a configured one). */
export function stricter(a: GcraParams, b: GcraParams | undefined): GcraParams {
  if (b === undefined) return a
  const slower = a.intervalMs >= b.intervalMs ? a : b
  // two rules at once: the spacing of the slower, no log (never looser than either)
  const { windowMs, spaced, intervalMs } = slower
  return { windowMs, spaced, intervalMs, toleranceMs: Math.min(a.toleranceMs, b.toleranceMs) }
}

/**
 * One replica's share while Redis is unreachable (fallback `local`): `mine` of the rate's spaced starts per
 * window, no burst — the replicas' shares add up to the rate, never more (the rule of the concurrency
 * fallback, src/limiter/redis/local-share.ts, picks `mine`). 0: no start here until Redis is back.
 */
export function shareOf(p: GcraParams, mine: number): GcraParams {
  if (p.intervalMs === 0 || mine >= p.spaced) return p
  const spaced = Math.max(0, Math.min(mine, p.spaced))
  const intervalMs = spaced === 0 ? Infinity : Math.ceil(p.windowMs / spaced)
  return { windowMs: p.windowMs, spaced, intervalMs, toleranceMs: 0 }
}

/** No rate, only a hold (a Retry-After): nobody starts before the TAT, then everyone may. */
export const HOLD_ONLY: GcraParams = Object.freeze({ windowMs: 0, spaced: 1, intervalMs: 0, toleranceMs: 0 })

export interface Reservation {
  /** ms from now until the request may start */
  readonly delayMs: number
  /** false: the start is later than `maxWaitMs`; nothing was reserved */
  readonly granted: boolean
  /** granted: the TAT this reservation left, to give the start back while nobody has reserved after it */
  readonly tat?: number
}

/**
 * One reservation: the request starts at max(now, TAT − tolerance, the hold's end), and the TAT moves one
 * interval past max(TAT, start). A start later than `maxWaitMs` is refused and reserves nothing. A hold
 * is its own number, not the TAT: a reservation's tolerance never reaches into it (docs/redis-limiter.md, "Rates").
 */
export function gcraReserve(
  tat: number,
  now: number,
  p: GcraParams,
  maxWaitMs: number,
  holdUntil = 0,
): { readonly reservation: Reservation; readonly tat: number } {
  // no burst right after a hold, whatever params wrote it (a hold alone is HOLD_ONLY, tolerance 0): the
  // TAT is at least the hold's end plus this rate's tolerance, so starts are spaced from its end
  const t = holdUntil > 0 ? Math.max(tat, holdUntil + p.toleranceMs) : tat
  const start = Math.max(now, t - p.toleranceMs, holdUntil)
  const delayMs = start - now
  if (delayMs > maxWaitMs) return { reservation: { delayMs, granted: false }, tat }
  const next = Math.max(t, start) + p.intervalMs
  return { reservation: { delayMs, granted: true, tat: next }, tat: next }
}

/** After a hold until `until`: the TAT moves to at least until + tolerance (no burst right after a hold). */
export function gcraHold(tat: number, until: number, p: GcraParams): number {
  return Math.max(tat, until + p.toleranceMs)
}

/**
 * A start taken and not sent, given back: only while the TAT is still the one its reservation left
 * (nobody reserved after it), so giving back never lets a start in earlier than the rule would have.
 */
export function gcraGiveBack(tat: number, taken: number, p: GcraParams): number {
  return tat === taken ? tat - p.intervalMs : tat
}

/**
 * Starts the API counted that the TAT may lack: `added` it surely lacks (each one interval), and at least
 * `used` spaced one interval apart ending now (a spent quota).
 */
export function gcraSync(tat: number, now: number, p: GcraParams, used: number, added: number): number {
  const t = added > 0 ? Math.max(tat, now) + added * p.intervalMs : tat
  return Math.max(t, now - p.windowMs + used * p.intervalMs)
}

/** The same rule in Lua, pasted into the Redis script (times in whole ms, Redis's clock). */
export const LUA_GCRA = `
local function gcra_reserve(tat, now, interval, tolerance, maxwait, holduntil)
  local t = tat
  if holduntil > 0 then t = math.max(tat, holduntil + tolerance) end
  local start = math.max(now, t - tolerance, holduntil)
  local delay = start - now
  if delay > maxwait then return delay, tat, 0 end
  return delay, math.max(t, start) + interval, 1
end
local function gcra_hold(tat, untilms, tolerance)
  return math.max(tat, untilms + tolerance)
end
local function gcra_sync(tat, now, interval, window, used, added)
  local t = tat
  if added > 0 then t = math.max(tat, now) + added * interval end
  return math.max(t, now - window + used * interval)
end
local function gcra_give_back(tat, taken, interval)
  if tat == taken then return tat - interval end
  return tat
end
`
