import { performance } from 'node:perf_hooks'
import { Pool } from 'undici'

export interface LoadOptions {
  readonly url: string
  readonly connections: number
  readonly durationMs: number
  readonly warmupMs?: number
  /** request path for connection i (lets each connection act as its own instance, etc.) */
  readonly path: (connection: number) => string
  readonly headers?: (connection: number) => Record<string, string>
  readonly method?: string
  readonly body?: string
  /** called when measuring starts and ends (after the warm-up), e.g. to read a process's CPU time */
  readonly onMeasure?: (phase: 'start' | 'end') => void
}

export interface LoadResult {
  readonly requests: number
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly statuses: Record<number, number>
  readonly errors: number
}

/**
 * A closed-loop load generator: `connections` loops, each sending its next request as soon as the
 * previous answer has been read. Latencies are measured with performance.now() (sub-ms resolution,
 * which autocannon's integer-ms histogram lacks at these speeds).
 */
export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const pool = new Pool(o.url, { connections: o.connections, pipelining: 1, keepAliveTimeout: 30_000 })
  const statuses: Record<number, number> = {}
  let errors = 0
  const latencies: number[] = []
  let measuring = false
  let stop = false
  const loop = async (i: number): Promise<void> => {
    const path = o.path(i)
    const headers = o.headers?.(i) ?? {}
    while (!stop) {
      const t0 = performance.now()
      try {
        const res = await pool.request({ path, method: o.method ?? 'GET', headers, body: o.body ?? null })
        await res.body.dump()
        if (measuring) {
          latencies.push(performance.now() - t0)
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
        }
      } catch {
        if (measuring) errors++
      }
    }
  }
  const loops = Array.from({ length: o.connections }, (_, i) => loop(i))
  await new Promise((r) => setTimeout(r, o.warmupMs ?? 1000))
  o.onMeasure?.('start')
  measuring = true
  const started = performance.now()
  await new Promise((r) => setTimeout(r, o.durationMs))
  measuring = false
  o.onMeasure?.('end')
  const elapsed = performance.now() - started
  stop = true
  await Promise.all(loops)
  await pool.close()
  latencies.sort((a, b) => a - b)
  const pick = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN
  return {
    requests: latencies.length,
    rps: (latencies.length / elapsed) * 1000,
    p50Ms: pick(0.5),
    p99Ms: pick(0.99),
    statuses,
    errors,
  }
}
