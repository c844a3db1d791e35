import type { OutgoingHttpHeaders } from 'node:http'
import { LRUCache } from 'lru-cache'
import type { StoredAnswer } from './answer.js'
import type { CacheSettings } from './settings.js'

const first = (v: OutgoingHttpHeaders[string]): string => (Array.isArray(v) ? v.join(',') : String(v ?? ''))

/** Lookup-list answers kept for `ttlMs`, bounded by entries and bytes, by request key (docs/reuse.md, "Answers that are never shared"). */
export class AnswerCache {
  readonly #lru: LRUCache<string, StoredAnswer>
  readonly #endpoints: ReadonlySet<string>
  evictions = 0

  constructor(settings: CacheSettings) {
    this.#endpoints = new Set(settings.endpoints)
    this.#lru = new LRUCache<string, StoredAnswer>({
      max: settings.maxEntries,
      maxSize: settings.maxBytes,
      sizeCalculation: (answer) => Math.max(1, answer.size),
      ttl: settings.ttlMs,
      dispose: (_answer, _key, reason) => {
        if (reason === 'evict') this.evictions++
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
    this.#lru.set(key, answer)
    return this.#lru.has(key)
  }

  get entries(): number {
    return this.#lru.size
  }

  get bytes(): number {
    return this.#lru.calculatedSize
  }
}
