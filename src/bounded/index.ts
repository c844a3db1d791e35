import { LRUCache } from 'lru-cache'

/**
 * A map that keeps at most `max` entries and forgets the least recently used one first (lru-cache):
 * for memos and records kept by a key that clients or upstream traffic choose — an instance, an app
 * name, an Authorization header — whose memory must follow the keys in use, not every key ever seen
 * (docs/development.md, "Bounded caches"). Each use states its bound and why it is enough.
 *
 * Bounded by a size of 1 per entry rather than lru-cache's `max`, which allocates its index for `max`
 * entries up front (about 220 KB at 10,000): an idle process pays for the entries it holds.
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

  delete(key: K): void {
    this.#entries.delete(key)
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
