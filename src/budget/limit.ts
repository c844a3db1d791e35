import { readFileSync } from 'node:fs'
import { getHeapStatistics } from 'node:v8'

const MiB = 1024 * 1024

/** What the process needs besides the budget: the idle process (about 130 MB resident, docs/benchmarks.md "Memory") and a margin. */
export const BASELINE_BYTES = 160 * MiB
/** the smallest budget derived from a limit, so a small container still serves */
export const MIN_BUDGET_BYTES = 16 * MiB

/**
 * The container's memory limit: cgroup v2 `memory.max`, else v1 `memory.limit_in_bytes`; undefined
 * when there is none (`max`, or v1's "no limit", a value near 2^63) or no cgroup file.
 */
export function containerMemoryLimit(read: (path: string) => string | undefined = readText): number | undefined {
  for (const path of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    const text = read(path)?.trim()
    if (text === undefined) continue
    const n = Number(text)
    if (text === 'max' || !Number.isSafeInteger(n) || n <= 0 || n >= 2 ** 60) return undefined
    return n
  }
  return undefined
}

/**
 * The budget from a container limit: half of what is left above the baseline, at least 16 MiB. Half,
 * because an accounted byte costs more than one resident byte (V8's objects around it, garbage not
 * yet collected, freed memory glibc keeps): measured in docs/deploy.md, "Memory: a budget".
 */
export function budgetFromLimit(limit: number): number {
  return Math.max(MIN_BUDGET_BYTES, Math.floor((limit - BASELINE_BYTES) / 2))
}

/**
 * What the heap holds besides the budget: the live heap after many keys (about 50 MB,
 * docs/benchmarks.md "Many keys") and a margin.
 */
export const HEAP_BASELINE_BYTES = 80 * MiB

/**
 * The budget without a container limit: half of V8's heap bound (`--max-old-space-size` and the young
 * generation), at most the bound less `HEAP_BASELINE_BYTES`. Half for the same reason as from a limit;
 * and a queued request is counted mostly on the heap, so past it a burst is refused with 503 before V8
 * runs out of heap and the process dies.
 */
export function budgetFromHeapBound(heapBound: number): number {
  return Math.max(MIN_BUDGET_BYTES, Math.min(Math.floor(heapBound / 2), heapBound - HEAP_BASELINE_BYTES))
}

/**
 * The budget in force: the setting; else derived from the container's limit, but never above the heap
 * bound less `HEAP_BASELINE_BYTES` (a bound set below half the limit, as `npm start`'s in a large
 * container, would otherwise run out before the budget refuses); else derived from the heap bound.
 */
export function memoryBudgetBytes(
  setting: number | undefined,
  limit = containerMemoryLimit(),
  heapBound = getHeapStatistics().heap_size_limit,
): number {
  if (setting !== undefined) return setting
  if (limit === undefined) return budgetFromHeapBound(heapBound)
  return Math.min(budgetFromLimit(limit), Math.max(MIN_BUDGET_BYTES, heapBound - HEAP_BASELINE_BYTES))
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}
