import { Counter, Gauge, type Registry } from 'prom-client'
import { LRUCache } from 'lru-cache'
import { CellCounter } from '../metrics/cells.js'

/** Permits one (instance, endpoint) did not spend, for /status. */
export interface KeySavings {
  readonly instance: string
  readonly endpoint: string
  /** requests answered from another request's upstream call */
  coalesced: number
  /** requests answered from the cache */
  cacheHits: number
}

/** How many keys /status remembers savings for (the least recently saving one is forgotten first). */
const STATUS_KEYS = 1_000

/** Metrics of reused answers, in the metrics area's cells (docs/development.md, "Decisions"); the organisation is in /status, not in labels. */
export class ReuseMetrics {
  readonly #saved: CellCounter<'endpoint' | 'by'>
  readonly #cache: CellCounter<'endpoint' | 'result'>
  readonly #byKey = new LRUCache<string, KeySavings>({ max: STATUS_KEYS })

  constructor(
    registry: Registry,
    private readonly endpointLabel: (endpointId: string) => string,
    read: { evictions(): number; entries(): number; bytes(): number; waiting(): number },
  ) {
    this.#saved = new CellCounter(
      'sluice_permits_saved_total',
      "Requests answered without a permit or an upstream call of their own: by coalescing (shared an identical request's call) or from the cache",
      ['endpoint', 'by'],
      registry,
    )
    this.#cache = new CellCounter(
      'sluice_cache_requests_total',
      'Requests for cached endpoints by result: hit (answered from the cache) or miss (sent upstream)',
      ['endpoint', 'result'],
      registry,
    )
    new Counter({
      name: 'sluice_cache_evictions_total',
      help: 'Cached answers pushed out before their time to keep cache.maxEntries and cache.maxBytes',
      registers: [registry],
      collect() {
        this.reset()
        this.inc(read.evictions())
      },
    })
    new Gauge({
      name: 'sluice_cache_bytes',
      help: 'Bytes of answers in the cache',
      registers: [registry],
      collect() {
        this.set(read.bytes())
      },
    })
    new Gauge({
      name: 'sluice_cache_entries',
      help: 'Answers in the cache',
      registers: [registry],
      collect() {
        this.set(read.entries())
      },
    })
    new Gauge({
      name: 'sluice_coalesce_waiting',
      help: "Requests waiting now for the answer of an identical request's upstream call",
      registers: [registry],
      collect() {
        this.set(read.waiting())
      },
    })
  }

  saved(instance: string, endpointId: string, by: 'coalescing' | 'cache'): void {
    this.#saved.cell({ endpoint: this.endpointLabel(endpointId), by }).n++
    const keyId = instance + '\n' + endpointId
    let key = this.#byKey.get(keyId)
    if (key === undefined)
      this.#byKey.set(keyId, (key = { instance, endpoint: endpointId, coalesced: 0, cacheHits: 0 }))
    if (by === 'cache') key.cacheHits++
    else key.coalesced++
  }

  cacheLookup(endpointId: string, hit: boolean): void {
    this.#cache.cell({ endpoint: this.endpointLabel(endpointId), result: hit ? 'hit' : 'miss' }).n++
  }

  /** permits saved per (instance, endpoint), most saved first */
  byKey(): KeySavings[] {
    return [...this.#byKey.values()]
      .map((k) => ({ ...k }))
      .sort((a, b) => b.coalesced + b.cacheHits - (a.coalesced + a.cacheHits))
  }
}
