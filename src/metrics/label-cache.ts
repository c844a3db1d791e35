/**
 * Label-bound children of prom-client metrics, cached by their label tuple so the hot path does one
 * Map lookup instead of validating labels and allocating a child per request. Entries remember their
 * organisation so an organisation's series can be dropped when it loses its own label.
 */
export class LabelCache<T> {
  private readonly entries = new Map<string, { readonly org: string; readonly value: T; readonly drop: () => void }>()

  get(key: string): T | undefined {
    return this.entries.get(key)?.value
  }

  /** Stores a child; `drop` removes its series from the metric. */
  set(key: string, org: string, value: T, drop: () => void): T {
    this.entries.set(key, { org, value, drop })
    return value
  }

  /** Removes every series of `org` from its metrics and from the cache. */
  dropOrg(org: string): void {
    for (const [key, entry] of this.entries) {
      if (entry.org !== org) continue
      entry.drop()
      this.entries.delete(key)
    }
  }

  get size(): number {
    return this.entries.size
  }
}
