import { describe, expect, it } from 'vitest'
import { BurstWatch, MIN_HEAP_GROWTH_BYTES, MIN_SPACING_MS } from '../../src/proxy/memory-after-burst.js'

// The rules of "Memory after a burst" (README) on their own: no sockets, no timers, no V8.
// test/proxy/memory-after-burst.test.ts runs them in the real proxy.

const MB = 1024 * 1024

function withOpen(burst: number, open: number): BurstWatch {
  const w = new BurstWatch(burst)
  for (let i = 0; i < open; i++) w.opened()
  return w
}
const close = (w: BurstWatch, n: number): void => {
  for (let i = 0; i < n; i++) w.closed()
}

describe('when a burst of connections has gone', () => {
  it('needs the burst reached, then two looks in a row with at most a tenth of it open', () => {
    const w = withOpen(100, 99)
    close(w, 99)
    expect(w.watching).toBe(false)
    expect(w.look(0, 200 * MB)).toBe(false) // never a burst

    const b = withOpen(100, 100)
    expect(b.look(0, 200 * MB)).toBe(false) // all open
    close(b, 89) // 11 open: more than a tenth
    expect(b.look(1, 200 * MB)).toBe(false)
    expect(b.look(2, 200 * MB)).toBe(false)
    close(b, 1) // 10: a tenth
    expect(b.look(3, 200 * MB)).toBe(false) // first look that sees it gone
    expect(b.look(4, 200 * MB)).toBe(true) // second in a row: collect
    expect(b.peak).toBe(10)
    expect(b.watching).toBe(false)
  })

  it('starts the quiet again when the connections come back between two looks', () => {
    const w = withOpen(100, 100)
    close(w, 100)
    expect(w.look(0, 200 * MB)).toBe(false)
    for (let i = 0; i < 20; i++) w.opened() // back above a tenth, gone again before the next look
    close(w, 20)
    expect(w.look(1, 200 * MB)).toBe(false)
    expect(w.look(2, 200 * MB)).toBe(true)
  })

  it('collects at most once per MIN_SPACING_MS, and then only when the heap has grown since', () => {
    const w = withOpen(100, 100)
    close(w, 100)
    w.look(0, 200 * MB)
    expect(w.look(1, 200 * MB)).toBe(true)
    w.collected(1, 40 * MB)

    // a second burst soon after: waits for the spacing, still looking
    for (let i = 0; i < 100; i++) w.opened()
    close(w, 100)
    expect(w.look(2, 200 * MB)).toBe(false)
    expect(w.look(3, 200 * MB)).toBe(false)
    expect(w.watching).toBe(true)
    expect(w.look(1 + MIN_SPACING_MS, 200 * MB)).toBe(true)
    w.collected(1 + MIN_SPACING_MS, 40 * MB)

    // a third that left the heap about where the last collection did: nothing to give back
    for (let i = 0; i < 100; i++) w.opened()
    close(w, 100)
    const later = 10 * MIN_SPACING_MS
    expect(w.look(later, 40 * MB + MIN_HEAP_GROWTH_BYTES - 1)).toBe(false)
    expect(w.look(later + 1, 40 * MB + MIN_HEAP_GROWTH_BYTES - 1)).toBe(false)
    expect(w.watching).toBe(false) // and the burst is over: no looking until the next
  })
})
