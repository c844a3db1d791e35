/**
 * `npm run bench -- tricks`: each hot-path trick of the access log and the metrics beside its plain
 * version (docs/benchmarks.md, "Hot-path tricks").
 *
 * 1. One call each (micro.ts): the trick and the plain version in interleaved rounds of one process
 *    (SLUICE_BENCH_TRICKS_ROUNDS rounds, 15, of 50 000 calls a side), ns and bytes allocated per call.
 * 2. One write per event-loop turn in the whole proxy (log-writes.ts), at 1 and 64 connections, in
 *    turns (SLUICE_BENCH_ROUNDS / SLUICE_BENCH_DURATION_MS); SLUICE_BENCH_TRICKS_PROXY=off skips it.
 *    Its CPU per request (as shipped) is what the gains of part 1 are a share of.
 * It prints figures, never a verdict; about three minutes with the defaults.
 */
import { percent, signedMs } from '../core.js'
import { measurePairs, type PairFigures } from './measure.js'
import { keptChars, microPairs } from './micro.js'
import { LOG_VARIANTS, runLogWritesBench, type LogWritesRow } from './log-writes.js'

const ROUNDS = Number(process.env.SLUICE_BENCH_TRICKS_ROUNDS ?? 15)
const WITH_PROXY = process.env.SLUICE_BENCH_TRICKS_PROXY !== 'off'

export async function runTricksBench(): Promise<string> {
  const calls = measurePairs(microPairs(), { rounds: ROUNDS, calls: 50_000 })
  if (keptChars() === 0) throw new Error('the access lines were optimised away')
  const proxy = WITH_PROXY ? await runLogWritesBench() : []
  // what one request costs the proxy as shipped, at 1 and 64 connections
  const cpu = [1, 64].map(
    (c) => proxy.find((r) => r.variant === LOG_VARIANTS[0].name && r.connections === c)?.figures.cpuUsPerRequest,
  )
  const out = [
    `### One call: each trick beside its plain version (${ROUNDS} interleaved rounds of 50 000 calls a side, medians)\n`,
    callsTable(calls, cpu),
  ]
  if (WITH_PROXY)
    out.push(
      '\n### Log lines written once per event-loop turn, in the whole proxy (sim at zero latency, in turns, medians of the rounds)\n',
      proxyTable(proxy),
    )
  return out.join('\n')
}

const bytes = (n: number | undefined): string => (n === undefined ? '?' : n.toFixed(0))

function callsTable(rows: readonly PairFigures[], cpuUs: readonly (number | undefined)[]): string {
  const lines = [
    '| call: trick vs plain | trick ns | plain ns | trick ÷ plain (median; lowest–highest round) | bytes / call (trick, plain) | calls / request | gain µs / request | share of the CPU / request (1; 64 conns) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const r of rows) {
    const gainUs = ((r.plainNs - r.trickNs) * r.pair.perRequest) / 1000
    const share = cpuUs.map((c) => (c === undefined ? '–' : `${((100 * gainUs) / c).toFixed(1)}%`)).join('; ')
    lines.push(
      `| ${r.pair.name} | ${r.trickNs.toFixed(0)} | ${r.plainNs.toFixed(0)} | ${r.ratio.median.toFixed(2)} (${r.ratio.low.toFixed(2)}–${r.ratio.high.toFixed(2)}) | ${bytes(r.trickBytes)}, ${bytes(r.plainBytes)} | ${r.pair.perRequest} | ${gainUs.toFixed(2)} | ${share} |`,
    )
  }
  return lines.join('\n')
}

function proxyTable(rows: readonly LogWritesRow[]): string {
  const lines = [
    '| variant | conns | req/s | p50 ms | CPU µs / request | vs one write per line: CPU / request | vs one write per line: req/s | vs one write per line: p50 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const { variant, connections, figures: f } of rows) {
    const v = f.vsBaseline
    lines.push(
      `| ${variant} | ${connections} | ${f.rps.toFixed(0)} | ${f.p50Ms.toFixed(3)} | ${f.cpuUsPerRequest.toFixed(1)} | ${percent(v.cpu)} | ${percent(v.rps)} | ${signedMs(v.p50Ms)} |`,
    )
  }
  return lines.join('\n')
}
