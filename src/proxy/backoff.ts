/**
 * The wait before sending a request again after an upstream 429: the API's Retry-After, else
 * full-jitter exponential back-off, so many waiters' retries spread out (docs/requests.md, "Queueing and retries").
 */
export function retryDelayMs(
  retryAfter: string | string[] | undefined,
  attempt: number,
  base: number,
  cap: number,
  now: number = Date.now(),
  random: () => number = Math.random,
): number {
  const fromHeader = parseRetryAfter(retryAfter, now)
  if (fromHeader !== undefined) return Math.min(fromHeader, cap)
  const ceiling = Math.min(cap, base * 2 ** Math.min(attempt, 30))
  return Math.round(random() * ceiling)
}

/** Retry-After in ms, or undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value
  if (text === undefined || text.trim() === '') return undefined
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000
  const date = Date.parse(text)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** Sleeps `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error)
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    timer.unref()
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal!.reason as Error)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
