import { describe, expect, it } from 'vitest'
import { BoundedMap } from '../../src/bounded/index.js'

// The one helper behind the memos kept by a key clients choose (docs/development.md, "Bounded
// caches"): never more than its bound, the least recently used entry forgotten first.

describe('BoundedMap', () => {
  it('keeps at most its bound, forgetting the least recently used entry first', () => {
    const map = new BoundedMap<string, number>(3)
    for (const k of ['a', 'b', 'c']) map.set(k, k.charCodeAt(0))
    expect(map.get('a')).toBe(97) // used: 'b' is now the least recently used
    map.set('d', 100)
    expect(map.size).toBe(3)
    expect(['a', 'b', 'c', 'd'].map((k) => map.has(k))).toEqual([true, false, true, true])
    for (let i = 0; i < 1_000; i++) map.set(`k${i}`, i)
    expect(map.size).toBe(3)
  })

  it('makes a missing value once, and keeps it', () => {
    const map = new BoundedMap<string, { n: number }>(2)
    let made = 0
    const make = (k: string) => ({ n: (made++, k.length) })
    const first = map.getOrMake('abc', make)
    expect(map.getOrMake('abc', make)).toBe(first)
    expect(made).toBe(1)
    map.delete('abc')
    expect(map.getOrMake('abc', make)).not.toBe(first)
    map.clear()
    expect(map.size).toBe(0)
  })

  it('prunes the entries a sweep names, and only those', () => {
    const map = new BoundedMap<string, number>(10)
    for (let i = 0; i < 6; i++) map.set(`k${i}`, i)
    map.prune((key, value) => value % 2 === 0 && key !== 'k4')
    expect([...map.entries()].map(([k]) => k).sort()).toEqual(['k1', 'k3', 'k4', 'k5'])
  })
})
