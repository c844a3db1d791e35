/**
 * The rule that learns a concurrency limit the API does not publish (docs/learned-limits.md): AIMD as
 * TCP's congestion avoidance does it (RFC 5681), with the evidence a 429 carries. Pure: the in-process
 * limiter runs it in memory, and the Redis scripts run the same rule in Lua (`learn` in
 * redis/lua-common.ts; test/limiter/learning/lua-matches-rule.test.ts holds the two together).
 */

/** How much one multiplicative decrease keeps of the learned limit (Netflix concurrency-limits' AIMD default). */
export const DECREASE = 0.9
/**
 * How fast the limit climbs, per success of a saturated key, as a fraction of one permit per round
 * trip: 1 (+1/limit a success, about +1 a round trip) away from trouble; PROBE_RATE when the next
 * whole permit would reach the concurrency that last drew a 429, so that level is probed again about
 * once every 1/PROBE_RATE round trips instead of every round trip.
 */
export const PROBE_RATE = 0.02
/** Added before taking the whole part of a learned value, so that 4.9999999… (sums of 1/value steps) counts as 5. */
export const WHOLE_SLACK = 1e-9

/** One key's learned state. */
export interface LearnedState {
  /** the learned limit, a real number in [floor, ceiling]; the whole part is enforced */
  readonly value: number
  /** the lowest concurrency that drew a 429 and has not worked since; 0 when none */
  readonly bad: number
  /** when the last multiplicative decrease was made (ms on the store's clock); 0 when never */
  readonly cutAt: number
}

/** What bounds one key's learning. */
export interface LearnBounds {
  /** the limit learning starts from (today's default 5, or the published limit) */
  readonly start: number
  /** learning never goes above it: `learning.ceiling`, or the published limit */
  readonly ceiling: number
  /** nor below it: `learning.floor` */
  readonly floor: number
}

/** What the API said about one request, as the limiter saw it at the release of its permit. */
export interface Feedback {
  /** `throttled`: the API answered 429; `success`: it answered (anything but a 429 or a 5xx) */
  readonly outcome: 'success' | 'throttled'
  /** permits of the key held when it was released, this one included */
  readonly held: number
  /** the key was saturated: every permit of its limit held (waiters held back only by their app's cap do not count) */
  readonly saturated: boolean
  /** when the permit was granted, on the same clock as `now` and `cutAt` */
  readonly grantedAt: number
  readonly now: number
}

export const initialState = (bounds: LearnBounds): LearnedState => ({ value: bounds.start, bad: 0, cutAt: 0 })

/** The whole number of permits a learned value allows. */
export function enforced(value: number, bounds: LearnBounds): number {
  return Math.max(1, Math.min(bounds.ceiling, Math.max(bounds.floor, Math.floor(value + WHOLE_SLACK))))
}

/**
 * A value brought within the bounds before the rule reads it: a start outside [floor, ceiling], or a
 * value learned under other bounds (a ceiling lowered since, another replica's settings), would
 * otherwise make a 429 lower nothing or raise the limit. The ceiling wins over the floor (a published
 * limit is never exceeded).
 */
const withinBounds = (value: number, bounds: LearnBounds): number => Math.min(bounds.ceiling, Math.max(bounds.floor, value))

/**
 * The state after one answer.
 *
 * A 429 with `held` permits out says the API allows fewer than `held` (or than the whole limit, when
 * permits came back since: the larger is the `level` that drew it): the value drops to at most
 * `level - 1` (the evidence), and by DECREASE — once per window: a 429 for a permit granted before the
 * last decrease was sent under the old limit and says nothing new (TCP NewReno's rule, RFC 6582), so
 * a burst of 429s cuts once. `level` is remembered as `bad`.
 *
 * A success while the key is saturated adds `rate / value` (about `rate` a round trip, RFC 5681's
 * congestion avoidance); `rate` is PROBE_RATE when the next whole permit would reach `bad`, else 1.
 * A success with `held >= bad` shows that level works now: `bad` is forgotten (the API's limit rose).
 */
export function learn(stored: LearnedState, bounds: LearnBounds, fb: Feedback): LearnedState {
  const { floor, ceiling } = bounds
  const state = { ...stored, value: withinBounds(stored.value, bounds) }
  if (fb.outcome === 'throttled') {
    const fresh = fb.grantedAt >= state.cutAt
    // The concurrency that drew the 429: what was held — or the whole limit, if permits came back
    // between the 429 and this release (it was sent while the limit was in use).
    const level = Math.max(fb.held, Math.floor(state.value + WHOLE_SLACK))
    let value = Math.min(state.value, level - 1)
    if (fresh) value = Math.min(value, state.value * DECREASE)
    value = Math.max(floor, Math.min(ceiling, value))
    const bad = state.bad === 0 ? level : Math.min(state.bad, level)
    return { value, bad, cutAt: fresh ? fb.now : state.cutAt }
  }
  let bad = state.bad
  if (bad > 0 && fb.held >= bad) bad = 0
  let value = state.value
  if (fb.saturated && value < ceiling) {
    const rate = bad > 0 && Math.floor(value + WHOLE_SLACK) + 1 >= bad ? PROBE_RATE : 1
    value = Math.min(ceiling, value + rate / value)
  }
  return { value, bad, cutAt: state.cutAt }
}
