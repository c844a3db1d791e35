import type { OutgoingHttpHeaders } from 'node:http'
import { LRUCache } from 'lru-cache'
import type { MemoryBudget, Reservation } from '../budget/budget.js'
import type { StoredAnswer } from './answer.js'
import type { CacheSettings } from './settings.js'

const first = (v: OutgoingHttpHeaders[string]): string => (Array.isArray(v) ? v.join(',') : String(v ?? ''))

/** Lookup-list answers kept for `ttlMs`, bounded by entries and bytes, by request key (docs/reuse.md, "Answers that are never shared"). */
export class AnswerCache {
  readonly #lru: LRUCache<string, StoredAnswer>
  readonly #endpoints: ReadonlySet<string>
  /** each kept answer's share of the memory budget, given back when it leaves the cache */
  readonly #held = new WeakMap<StoredAnswer, Reservation>()
  evictions = 0

  constructor(
    settings: CacheSettings,
    private readonly budget?: MemoryBudget,
  ) {
    this.#endpoints = new Set(settings.endpoints)
    this.#lru = new LRUCache<string, StoredAnswer>({
      max: settings.maxEntries,
      maxSize: settings.maxBytes,
      sizeCalculation: (answer) => Math.max(1, answer.size),
      ttl: settings.ttlMs,
      dispose: (answer, _key, reason) => {
        if (reason === 'evict') this.evictions++
        this.#held.get(answer)?.release()
      },
    })
  }

  covers(endpointId: string): boolean {
    return this.#endpoints.has(endpointId)
  }

  get(key: string): StoredAnswer | undefined {
    return this.#lru.get(key)
  }

  /** Keeps the answer when it may be kept; true when it was. */
  offer(key: string, answer: StoredAnswer): boolean {
    if (answer.status !== 200 || answer.headers['set-cookie'] !== undefined) return false
    if (/(^|[\s,])no-store($|[\s,])/i.test(first(answer.headers['cache-control']))) return false
    // Past the memory budget an answer is simply not kept: the cache never refuses a request.
    const held = this.budget?.reserve('cache', Math.max(1, answer.size))
    if (this.budget !== undefined && held === undefined) return false
    if (held !== undefined) this.#held.set(answer, held)
    this.#lru.set(key, answer)
    if (this.#lru.peek(key) === answer) return true
    held?.release()
    return false
  }

  get entries(): number {
    return this.#lru.size
  }

  get bytes(): number {
    return this.#lru.calculatedSize
  }
}
