import { performance } from 'node:perf_hooks'
import { BodyTooSlowError } from './errors.js'

/** The minimum pace of a request body: `minBytesPerSecond` over every window of `windowMs` but the first (0: none). */
export interface BodyPace {
  readonly minBytesPerSecond: number
  readonly windowMs: number
}

const TIMED_OUT = Symbol('timed out')

/**
 * A request body cut off (408) when the client sends too slowly; only time spent waiting on the
 * client counts, per window rather than on average (docs/requests.md, "Slow and hostile clients").
 */
export class PacedBody {
  private waitedMs = 0
  private windowEnd: number
  private windowIndex = 0
  private windowBytes = 0
  private readonly quota: number

  constructor(
    private readonly source: AsyncIterator<Buffer>,
    private readonly pace: BodyPace,
  ) {
    this.windowEnd = pace.windowMs
    this.quota = (pace.minBytesPerSecond * pace.windowMs) / 1000
  }

  async next(): Promise<IteratorResult<Buffer>> {
    if (this.pace.minBytesPerSecond === 0) return this.source.next()
    const started = performance.now()
    const before = this.waitedMs
    const pending = this.source.next()
    for (;;) {
      const result = await within(pending, this.windowEnd - before - (performance.now() - started))
      const waited = before + (performance.now() - started)
      this.roll(waited)
      if (result !== TIMED_OUT) {
        this.waitedMs = waited
        if (result.done !== true) this.windowBytes += result.value.length
        return result
      }
    }
  }

  /** Closes the windows that have passed by `waited`; throws when one of them (the first excepted) fell short. */
  private roll(waited: number): void {
    while (waited >= this.windowEnd) {
      if (this.windowIndex > 0 && this.windowBytes < this.quota) {
        this.waitedMs = waited
        throw new BodyTooSlowError(this.pace.minBytesPerSecond, this.pace.windowMs)
      }
      this.windowIndex++
      this.windowBytes = 0
      this.windowEnd += this.pace.windowMs
    }
  }
}

/** `pending`'s result, or TIMED_OUT after `ms` (the timer goes as soon as either is known). */
function within<T>(pending: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, ms), TIMED_OUT)
  })
  return Promise.race([pending, timeout]).finally(() => clearTimeout(timer))
}
