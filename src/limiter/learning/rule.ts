/**
 * The rule that learns a concurrency limit (docs/learned-limits.md, "The rule"). Pure; the Redis scripts
 * run the same rule in Lua (`learn`, lua-common.ts), held together by test/limiter/learning/lua-matches-rule.test.ts.
 */

/** How much one multiplicative decrease keeps of the learned limit (Netflix concurrency-limits' AIMD default). */
export const DECREASE = 0.9
/** Climb per success of a saturated key, in permits a round trip; PROBE_RATE next to `bad` (docs/learned-limits.md, "The rule"). */
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

/** Brought within [floor, ceiling] first, the ceiling winning, so a value learned under other bounds cannot make a 429 raise the limit. */
const withinBounds = (value: number, bounds: LearnBounds): number =>
  Math.min(bounds.ceiling, Math.max(bounds.floor, value))

/** The state after one answer (docs/learned-limits.md, "The rule": the table and why each step is so). */
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
