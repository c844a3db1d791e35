/**
 * Timing and allocation of one call, for bench/tricks: a trick and its plain version in
 * interleaved rounds of one process, so that this machine's drift (docs/benchmarks.md, "Method")
 * hits both alike.
 */

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN

export interface Pair {
  readonly name: string
  /** how many of these calls one request makes */
  readonly perRequest: number
  readonly trick: (i: number) => void
  readonly plain: (i: number) => void
}

export interface PairFigures {
  readonly pair: Pair
  /** medians over the rounds, ns per call */
  readonly trickNs: number
  readonly plainNs: number
  /** trick ÷ plain, round by round: the median, and the lowest and highest round */
  readonly ratio: { readonly median: number; readonly low: number; readonly high: number }
  /** bytes allocated per call (young generation), undefined when no clean sample was had */
  readonly trickBytes: number | undefined
  readonly plainBytes: number | undefined
}

export interface RoundOptions {
  readonly rounds: number
  /** calls per side and round */
  readonly calls: number
}

/** Each round runs every pair's two sides for `calls` calls, the side that goes first alternating. */
export function measurePairs(pairs: readonly Pair[], o: RoundOptions): PairFigures[] {
  const ns = pairs.map(() => ({ trick: [] as number[], plain: [] as number[] }))
  const time = (run: (i: number) => void): number => {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < o.calls; i++) run(i)
    return Number(process.hrtime.bigint() - t0) / o.calls
  }
  // warm-up: every side compiled before any round counts
  for (const p of pairs) {
    for (let i = 0; i < 20_000; i++) {
      p.trick(i)
      p.plain(i)
    }
  }
  for (let round = 0; round < o.rounds; round++) {
    for (const [k, p] of pairs.entries()) {
      if (round % 2 === 0) {
        ns[k]!.trick.push(time(p.trick))
        ns[k]!.plain.push(time(p.plain))
      } else {
        ns[k]!.plain.push(time(p.plain))
        ns[k]!.trick.push(time(p.trick))
      }
    }
  }
  return pairs.map((pair, k) => {
    const { trick, plain } = ns[k]!
    const ratios = trick.map((t, r) => t / plain[r]!)
    return {
      pair,
      trickNs: median(trick),
      plainNs: median(plain),
      ratio: { median: median(ratios), low: Math.min(...ratios), high: Math.max(...ratios) },
      trickBytes: bytesPerCall(pair.trick),
      plainBytes: bytesPerCall(pair.plain),
    }
  })
}

/**
 * Bytes allocated per call: the heap's growth over a short chunk of calls, less an empty chunk's. A
 * chunk a scavenge falls into shrinks the heap or grows it less, and the calls allocate the same each
 * time, so the figure is the median of the larger half of 400 chunks' growths (a rare chunk that
 * allocates something else, a Map growing, does not move it).
 */
function bytesPerCall(run: (i: number) => void): number | undefined {
  const CHUNK = 200
  const growth = (body: (i: number) => void): number => {
    const growths: number[] = []
    for (let c = 0; c < 400; c++) {
      const before = process.memoryUsage().heapUsed
      for (let i = 0; i < CHUNK; i++) body(i)
      growths.push(process.memoryUsage().heapUsed - before)
    }
    return median(growths.sort((a, b) => b - a).slice(0, growths.length / 2))
  }
  const empty = growth(() => {})
  const used = growth(run)
  return used < 0 ? undefined : Math.max(0, (used - empty) / CHUNK)
}
