import type { AcquireOptions, LearnOptions, Rate } from '../limiter/types.js'
import type { RequestSpans } from '../tracing/index.js'
import type { HangUp } from './hang-up.js'

/**
 * A request's acquire options. A class, not an object literal with a getter, which made every waiting
 * request's options a dictionary (docs/benchmarks.md, "Where a queued request's heap goes (live bytes)").
 */
export class AcquireRequest implements AcquireOptions {
  constructor(
    readonly limit: number,
    readonly learn: LearnOptions | undefined,
    readonly deadline: number,
    /** set when the request waited before (sent back by the API, or a permit in doubt): it goes back to its old place */
    readonly arrivedAt: number | undefined,
    readonly maxQueue: number,
    readonly app: string,
    private readonly client: HangUp,
    /** the request's spans, when tracing is on: the wait's span gets the forecast */
    private readonly spans: RequestSpans | undefined,
    /** the endpoint's rate, if any (docs/redis-limiter.md, "Rates") */
    readonly rate: Rate | undefined = undefined,
    /** the app's followers on the key now (src/reuse): they count toward its maxQueued */
    readonly followers: (() => number) | undefined = undefined,
  ) {}

  get signal(): AbortSignal {
    return this.client.signal
  }

  onForecast(ahead: number, expectedMs: number | undefined): void {
    this.spans?.forecast(ahead, expectedMs)
  }
}
