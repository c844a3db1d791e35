/** The longest delay Node's setTimeout takes: above it (about 24.8 days) the timer fires at once. */
export const MAX_TIMER_MS = 2_147_483_647

/** A pending deadline; `clear` stops it. */
export interface DeadlineTimer {
  clear(): void
}

/**
 * Calls `fire` once at `deadline` (ms since epoch, `Date.now()` clock), however far away: a delay
 * beyond MAX_TIMER_MS is waited in steps, so a long `queue.maxWaitMs` never makes every wait end at
 * once. The timer is `unref`'d: a wait alone never keeps the process alive.
 */
export function deadlineTimer(deadline: number, fire: () => void): DeadlineTimer {
  let timer: NodeJS.Timeout
  const arm = (): void => {
    const left = deadline - Date.now()
    if (left > MAX_TIMER_MS) {
      timer = setTimeout(arm, MAX_TIMER_MS)
    } else {
      timer = setTimeout(fire, Math.max(0, left))
    }
    timer.unref()
  }
  arm()
  return { clear: () => clearTimeout(timer) }
}
