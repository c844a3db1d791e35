/*
 * What the sim saw, per (instance, endpoint): the figures tests and benchmarks check. Times come from
 * the monotonic clock (performance.now), never from the injectable date clock.
 */

export interface SimKeyStats {
  readonly instance: string
  /** endpoint id, `METHOD /template` */
  readonly endpoint: string
  /** the limit the sim enforces for this key; null = unlimited */
  readonly limit: number | null
  /** requests in progress now */
  readonly inProgress: number
  /** the most requests ever in progress at once (since start or reset) */
  readonly maxInProgress: number
  /** the most requests ever trying to be in progress at once (a 429's included): above `limit`, a client sent more than the limit */
  readonly maxAttempted: number
  /** every request for this key, answered or not (429s and 410s included) */
  readonly requests: number
  /** all 429s: over the limit, and pushback from `rejectRatio` */
  readonly rejected429: number
  /** the 429s that `rejectRatio` caused (under the limit) */
  readonly pushback429: number
  readonly rejected410: number
  /** time with at least one request in progress, ms */
  readonly busyMs: number
  /** the integral of requests in progress over time, ms (utilisation = requestMs / (limit × elapsedMs)) */
  readonly requestMs: number
  /**
   * handoffs: a request left at the limit and a later one took the freed slot; their idle time is what a
   * limiter in front of the API loses per handoff. Quantiles over the latest HANDOFF_SAMPLES; null when none.
   */
  readonly handoffs: number
  readonly handoffP50Ms: number | null
  readonly handoffP99Ms: number | null
}

export type ArrivalOutcome =
  /** admitted: counted in progress */
  | 'admitted'
  /** 429: the key was at its limit */
  | 'limited'
  /** 429 under the limit, from `rejectRatio` */
  | 'pushback'
  /** 410: retired version */
  | 'retired'

export interface SimArrival {
  /** the `x-test-seq` request header, null when absent */
  readonly seq: string | null
  readonly instance: string
  readonly endpoint: string
  /** ms since the sim started or was last reset */
  readonly atMs: number
  readonly outcome: ArrivalOutcome
}

export interface SimStats {
  /** ms since the sim started or was last reset */
  readonly elapsedMs: number
  /** by `${instance} ${endpoint}`, e.g. `acme POST /accounts/search` */
  readonly keys: Readonly<Record<string, SimKeyStats>>
  /** the latest arrivals, oldest first (bounded by `arrivalLogSize`) */
  readonly arrivals: readonly SimArrival[]
  /** arrivals that fell off the bounded log */
  readonly arrivalsDropped: number
  /** requests answered 400 (a path the catalog refuses, a bad x-sim-* header) or 404 (not under /v2) */
  readonly badRequests: number
  /** the handoffs of every key together (see SimKeyStats.handoffs) */
  readonly handoffs: HandoffFigures
}

export interface HandoffFigures {
  readonly count: number
  readonly p50Ms: number | null
  readonly p99Ms: number | null
}

/** Quantiles of idle times (ms); the samples are sorted in place. */
export function handoffFigures(count: number, gaps: number[]): HandoffFigures {
  gaps.sort((a, b) => a - b)
  const at = (q: number): number | null =>
    gaps.length === 0 ? null : gaps[Math.min(gaps.length - 1, Math.ceil(q * gaps.length) - 1)]!
  return { count, p50Ms: at(0.5), p99Ms: at(0.99) }
}

/** The key of `stats().keys`. */
export const statsKey = (instance: string, endpoint: string): string => `${instance} ${endpoint}`

/** How many handoff idle times a key keeps for its quantiles (the latest). */
export const HANDOFF_SAMPLES = 20_000

/** One (instance, endpoint): counters and the in-progress integrals. */
export class KeyState {
  inProgress = 0
  maxInProgress = 0
  maxAttempted = 0
  requests = 0
  rejected429 = 0
  pushback429 = 0
  rejected410 = 0
  private busyMs = 0
  private requestMs = 0
  private lastChange: number
  /** when slots of the full key were freed and not yet taken again, oldest first */
  private freedAt: number[] = []
  private handoffs = 0
  /** the latest handoff idle times, a ring of HANDOFF_SAMPLES */
  private readonly gaps: number[] = []

  constructor(
    readonly instance: string,
    readonly endpoint: string,
    /** changes with `Sim.setHiddenLimit` */
    public limit: number | null,
    now: number,
  ) {
    this.lastChange = now
  }

  private accumulate(now: number): void {
    const dt = now - this.lastChange
    if (this.inProgress > 0) {
      this.busyMs += dt
      this.requestMs += this.inProgress * dt
    }
    this.lastChange = now
  }

  enter(now: number): void {
    this.accumulate(now)
    const freed = this.freedAt.shift()
    if (freed !== undefined) {
      this.gaps[this.handoffs++ % HANDOFF_SAMPLES] = now - freed
    }
    if (++this.inProgress > this.maxInProgress) this.maxInProgress = this.inProgress
    if (this.inProgress > this.maxAttempted) this.maxAttempted = this.inProgress
  }

  /** a request refused with 429 because `inProgress` was at the limit */
  refused(): void {
    this.rejected429++
    if (this.inProgress + 1 > this.maxAttempted) this.maxAttempted = this.inProgress + 1
  }

  leave(now: number): void {
    this.accumulate(now)
    if (this.limit !== null && this.inProgress >= this.limit) this.freedAt.push(now)
    this.inProgress--
  }

  /** Zero the counters; requests still in progress stay counted (they will leave). */
  reset(now: number): void {
    this.accumulate(now)
    this.maxInProgress = this.maxAttempted = this.inProgress
    this.requests = this.rejected429 = this.pushback429 = this.rejected410 = 0
    this.busyMs = this.requestMs = 0
    this.handoffs = 0
    this.gaps.length = 0
  }

  snapshot(now: number): SimKeyStats {
    this.accumulate(now)
    const {
      instance,
      endpoint,
      limit,
      inProgress,
      maxInProgress,
      maxAttempted,
      requests,
      rejected429,
      pushback429,
      rejected410,
    } = this
    const handoffs = handoffFigures(this.handoffs, [...this.gaps])
    return {
      instance,
      endpoint,
      limit,
      inProgress,
      maxInProgress,
      maxAttempted,
      requests,
      rejected429,
      pushback429,
      rejected410,
      busyMs: this.busyMs,
      requestMs: this.requestMs,
      handoffs: this.handoffs,
      handoffP50Ms: handoffs.p50Ms,
      handoffP99Ms: handoffs.p99Ms,
    }
  }

  /** How many handoffs, and the latest idle times (ms), for figures over every key. */
  handoffSamples(): { readonly count: number; readonly gaps: readonly number[] } {
    return { count: this.handoffs, gaps: this.gaps }
  }
}

/** A bounded log: the newest `capacity` entries, oldest first. */
export class ArrivalLog {
  private readonly items: SimArrival[] = []
  private head = 0
  dropped = 0

  constructor(private readonly capacity: number) {}

  push(item: SimArrival): void {
    if (this.capacity === 0) {
      this.dropped++
    } else if (this.items.length < this.capacity) {
      this.items.push(item)
    } else {
      this.items[this.head] = item
      this.head = (this.head + 1) % this.capacity
      this.dropped++
    }
  }

  toArray(): SimArrival[] {
    return [...this.items.slice(this.head), ...this.items.slice(0, this.head)]
  }

  clear(): void {
    this.items.length = 0
    this.head = 0
    this.dropped = 0
  }
}
