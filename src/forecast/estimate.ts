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
  /**
   * a floor of the wait, ms: the newcomer needs `q + 1` releases, so some permit must be held
   * `r = floor(q / limit)` more times after its next release, as if every permit in flight came back
   * now. `r` holds take about `r` times the mean, give or take `sqrt(r)` times their variation; the
   * floor takes two such variations off: `r × mean − 2 × sqrt(r) × deviation`. Refusals are decided on
   * it, so they err towards serving.
   */
  readonly lowerMs: number | undefined
}

const NO_WAIT: Prediction = { waits: false, expectedMs: 0, lowerMs: 0 }
const UNKNOWN: Prediction = { waits: true, expectedMs: undefined, lowerMs: undefined }

/**
 * Predicted waits per key from what this replica sees: the requests queued ahead of a newcomer and a
 * moving estimate of how long each permit is held. With `limit` permits, a newcomer with `q` requests
 * ahead is served after `q + 1` releases: `floor(q / limit)` full rounds of the service time, plus
 * the rest of the `(q mod limit)`-th soonest permit in flight. With the Redis backend the requests of
 * other replicas are not counted, so the prediction is lower than the truth, never higher by it.
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
