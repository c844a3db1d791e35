import type { AcquireOptions, LearnOptions } from '../limiter/types.js'
import type { HangUp } from './hang-up.js'

/**
 * The permit stage's one object: a request's acquire options (`limiter.acquire(key, options)`, awaited
 * in the handler's own frame). A class, not an object literal: the literal's getter made every
 * waiting request's options a dictionary (about 470 bytes, docs/benchmarks.md "Memory"), and its
 * closure kept the request's scope. The client's signal is made only if the request has to wait
 * (see AcquireOptions.signal).
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
  ) {}

  get signal(): AbortSignal {
    return this.client.signal
  }
}
