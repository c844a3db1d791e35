import { LRUCache } from 'lru-cache'

/** Weight of the newest permit's hold time in the moving estimate (an exponentially weighted mean). */
export const SERVICE_TIME_WEIGHT = 0.2
/** Keys whose figures are kept; the least recently used key is forgotten first (it starts over). */
const MAX_KEYS = 10_000

/** What this replica knows of one (instance, endpoint). */
export class KeyLoad {
  /** requests of this replica waiting for a permit of the key */
  waiting = 0
  /** when each permit this replica holds for the key was granted (Date.now()), oldest first */
  readonly grants: number[] = []
  /** moving estimate of how long a permit is held, ms */
  serviceMs = 0
  /** moving estimate of how far one hold time lies from `serviceMs`, ms (as TCP estimates its round-trip variation) */
  deviationMs = 0
  /** permits given back so far */
  samples = 0

  granted(at: number): void {
    this.grants.push(at)
  }

  released(grantedAt: number, at: number): void {
    const i = this.grants.indexOf(grantedAt)
    if (i >= 0) this.grants.splice(i, 1)
    const held = at - grantedAt
    if (this.samples === 0) {
      this.serviceMs = held
      this.deviationMs = held / 2
    } else {
      this.deviationMs += SERVICE_TIME_WEIGHT * (Math.abs(held - this.serviceMs) - this.deviationMs)
      this.serviceMs += SERVICE_TIME_WEIGHT * (held - this.serviceMs)
    }
    this.samples++
  }
}

export interface Prediction {
  /** the request will have to queue (every permit this replica knows of is taken, or others wait) */
  readonly waits: boolean
  /** the best estimate of the wait, ms; undefined while too few permits have been given back */
  readonly expectedMs: number | undefined
  /** a floor of the wait, ms, on which refusals are decided so they err towards serving (docs/requests.md, "Spending fewer permits") */
  readonly lowerMs: number | undefined
}

const NO_WAIT: Prediction = { waits: false, expectedMs: 0, lowerMs: 0 }
const UNKNOWN: Prediction = { waits: true, expectedMs: undefined, lowerMs: undefined }

/**
 * Predicted waits per key from what this replica sees (docs/requests.md, "Spending fewer permits"):
 * with the Redis backend other replicas' waiters are missing, so a prediction errs low, never high.
 */
export class WaitForecasts {
  readonly #keys = new LRUCache<string, KeyLoad>({ max: MAX_KEYS })

  constructor(private readonly minSamples: number) {}

  of(instance: string, endpoint: string): KeyLoad {
    const id = instance + '\n' + endpoint
    let load = this.#keys.get(id)
    if (load === undefined) this.#keys.set(id, (load = new KeyLoad()))
    return load
  }

  predict(load: KeyLoad, limit: number, now: number): Prediction {
    const inFlight = load.grants.length
    if (load.waiting === 0 && inFlight < limit) return NO_WAIT
    if (load.samples < this.minSamples) return UNKNOWN
    const service = load.serviceMs
    const ahead = load.waiting
    const fullRounds = Math.floor(ahead / limit)
    const rounds = fullRounds * service
    let rest = 0
    if (inFlight > 0) {
      const remaining = load.grants.map((g) => Math.max(0, service - (now - g))).sort((a, b) => a - b)
      rest = remaining[ahead % limit] ?? 0
    }
    const lower = Math.max(0, rounds - 2 * Math.sqrt(fullRounds) * load.deviationMs)
    return { waits: true, expectedMs: rounds + rest, lowerMs: lower }
  }
}
