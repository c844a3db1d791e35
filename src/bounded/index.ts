import { LRUCache } from 'lru-cache'

/**
 * A map of at most `max` entries, least recently used out first, for memos kept by a key clients
 * choose; sized per entry rather than by lru-cache's `max` (docs/development.md, "Bounded caches").
 */
export class BoundedMap<K extends NonNullable<unknown>, V extends NonNullable<unknown>> {
  readonly #entries: LRUCache<K, V>

  constructor(readonly max: number) {
    this.#entries = new LRUCache<K, V>({ maxSize: max, sizeCalculation: () => 1 })
  }

  get size(): number {
    return this.#entries.size
  }

  get(key: K): V | undefined {
    return this.#entries.get(key)
  }

  has(key: K): boolean {
    return this.#entries.has(key)
  }

  set(key: K, value: V): void {
    this.#entries.set(key, value)
  }

  /** every entry, most recently used first (`/status` lists some) */
  entries(): IterableIterator<[K, V]> {
    return this.#entries.entries()
  }

  delete(key: K): void {
    this.#entries.delete(key)
  }

  /** Deletes every entry `drop` says (a walk over all of them: for a periodic sweep, not the hot path). */
  prune(drop: (key: K, value: V) => boolean): void {
    const dropped: K[] = []
    for (const [key, value] of this.#entries.entries()) if (drop(key, value)) dropped.push(key)
    for (const key of dropped) this.#entries.delete(key)
  }

  clear(): void {
    this.#entries.clear()
  }

  /** The value kept for `key`, made by `make` (and kept) when there is none. */
  getOrMake(key: K, make: (key: K) => V): V {
    let value = this.#entries.get(key)
    if (value === undefined) {
      value = make(key)
      this.#entries.set(key, value)
    }
    return value
  }
}
