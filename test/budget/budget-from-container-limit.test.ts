import { describe, expect, it } from 'vitest'
import {
  budgetFromHeapBound,
  budgetFromLimit,
  containerMemoryLimit,
  memoryBudgetBytes,
} from '../../src/budget/limit.js'

const MiB = 1024 * 1024
/** the cgroup files as a container would show them */
const files =
  (entries: Record<string, string>) =>
  (path: string): string | undefined =>
    entries[path]

describe('the memory budget: from the setting, else from the container limit (cgroup v2, then v1), else from the heap bound', () => {
  it('reads cgroup v2 memory.max, then v1 memory.limit_in_bytes; no limit is none', () => {
    expect(containerMemoryLimit(files({ '/sys/fs/cgroup/memory.max': '536870912\n' }))).toBe(512 * MiB)
    expect(containerMemoryLimit(files({ '/sys/fs/cgroup/memory.max': 'max\n' }))).toBeUndefined()
    expect(containerMemoryLimit(files({ '/sys/fs/cgroup/memory/memory.limit_in_bytes': '268435456\n' }))).toBe(
      256 * MiB,
    )
    // cgroup v1 without a limit: the largest page-aligned 64-bit value
    expect(
      containerMemoryLimit(files({ '/sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712\n' })),
    ).toBeUndefined()
    expect(containerMemoryLimit(files({}))).toBeUndefined()
  })

  it('derives half of the limit above 160 MiB, at least 16 MiB; the setting wins', () => {
    expect(budgetFromLimit(512 * MiB)).toBe(176 * MiB)
    expect(budgetFromLimit(256 * MiB)).toBe(48 * MiB)
    expect(budgetFromLimit(128 * MiB)).toBe(16 * MiB)
    expect(memoryBudgetBytes(undefined, 512 * MiB, 4096 * MiB)).toBe(176 * MiB)
    expect(memoryBudgetBytes(10 * MiB, 512 * MiB, 4096 * MiB)).toBe(10 * MiB)
    // the chart's pairing: a 512 MiB limit, --max-old-space-size=256 (and the young generation)
    expect(memoryBudgetBytes(undefined, 512 * MiB, 304 * MiB)).toBe(176 * MiB)
  })

  it('never above the heap bound less 80 MiB: a bound set below half the limit would run out first', () => {
    expect(memoryBudgetBytes(undefined, 4096 * MiB, 560 * MiB)).toBe(480 * MiB)
    expect(memoryBudgetBytes(undefined, 4096 * MiB, 60 * MiB)).toBe(16 * MiB)
  })

  it("without a container limit, derives half of V8's heap bound, so a burst is refused before the heap runs out", () => {
    expect(budgetFromHeapBound(548 * MiB)).toBe(274 * MiB)
    expect(budgetFromHeapBound(20 * MiB)).toBe(16 * MiB)
    // a small bound: the bound less 80 MiB (the live heap and a margin) is less than half of it
    expect(budgetFromHeapBound(120 * MiB)).toBe(40 * MiB)
    expect(memoryBudgetBytes(undefined, undefined, 548 * MiB)).toBe(274 * MiB)
    expect(memoryBudgetBytes(10 * MiB, undefined, 548 * MiB)).toBe(10 * MiB)
  })
})
