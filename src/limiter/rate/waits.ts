import { performance } from 'node:perf_hooks'
import { QueueTimeoutError, WaitTooLongError } from '../errors.js'
import type { PermitKey } from '../types.js'

const describe = (key: PermitKey): string => `${key.endpoint} (instance ${key.instance})`

/** A start past the deadline: refused at once, with when to try again. */
export function tooLong(key: PermitKey, delayMs: number, maxWaitMs: number): Error {
  const err = new WaitTooLongError(describe(key), Math.round(delayMs), Math.max(0, Math.round(maxWaitMs)))
  return Object.assign(err, { headers: { 'retry-after': String(Math.max(1, Math.ceil(delayMs / 1000))) } })
}

/** Waits for a turn in line, at most `maxWaitMs` (then the queue's timeout), or rejects with the first signal's reason. */
export async function turnOf(
  turn: Promise<void>,
  maxWaitMs: number,
  signal: AbortSignal | undefined,
  drained: AbortSignal,
  key: PermitKey,
): Promise<void> {
  const began = performance.now()
  const stop = new AbortController()
  const timedOut = sleep(maxWaitMs, signal, drained, stop.signal).then(() => {
    if (!stop.signal.aborted) throw new QueueTimeoutError(Math.round(performance.now() - began), describe(key))
  })
  try {
    await Promise.race([turn, timedOut])
  } finally {
    stop.abort()
  }
}

/** Sleeps `ms`, or rejects with the reason of the first signal to abort; the timer is unref'd and never above 2^31−1. */
export function sleep(
  ms: number,
  signal: AbortSignal | undefined,
  drained: AbortSignal,
  stop?: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error)
    if (drained.aborted) return reject(drained.reason as Error)
    const done = (): void => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      drained.removeEventListener('abort', onAbort)
      stop?.removeEventListener('abort', onStop)
    }
    const onAbort = (event: Event): void => {
      done()
      reject((event.target as AbortSignal).reason as Error)
    }
    const onStop = (): void => {
      done()
      resolve()
    }
    const timer = setTimeout(
      () => {
        done()
        resolve()
      },
      Math.min(Math.max(0, ms), 2 ** 31 - 1),
    )
    timer.unref()
    signal?.addEventListener('abort', onAbort, { once: true })
    drained.addEventListener('abort', onAbort, { once: true })
    stop?.addEventListener('abort', onStop, { once: true })
  })
}
