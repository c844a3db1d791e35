/**
 * What traces cost the proxy (`npm run bench -- traces`): sluice processes in front of the sim (zero
 * latency) — tracing off (no OTEL_* variable: the SDK is not loaded), on with every request sampled
 * and exported (OTLP/HTTP protobuf, the default, to a collector stand-in in this process), and on with
 * nothing sampled (always_off: the spans are made non-recording and `traceparent` still goes to the
 * API) — taking turns in short rounds at 1 and 64 connections, compared with "off" round by round
 * (see turns.ts). The load sends no `traceparent`, so every request starts its own trace.
 *
 * SLUICE_BENCH_BEFORE=<a checkout of another commit, built> adds that build's sluice as one more
 * target, so "off" can be compared with the code before tracing existed in the same run.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { startSimChild, startSluiceChild, type Child } from '../children.js'
import { percent, ROUND_MS, ROUNDS, signedMs } from '../core.js'
import { measureInTurns, type TurnTarget } from '../turns.js'

interface Variant {
  readonly name: string
  readonly env: (collector: string) => Record<string, string>
  /** the entry point of another build (SLUICE_BENCH_BEFORE) */
  readonly main?: string
}

const VARIANTS: Variant[] = [
  { name: 'tracing off (default)', env: () => ({}) },
  {
    name: 'on, every request sampled and exported',
    env: (collector) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: collector, OTEL_TRACES_SAMPLER: 'always_on' }),
  },
  {
    name: 'on, nothing sampled (always_off)',
    env: (collector) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: collector, OTEL_TRACES_SAMPLER: 'always_off' }),
  },
]

/** A collector stand-in: reads every export, answers it with an empty success, counts the bytes. */
async function startSink(): Promise<{ url: string; bytes: () => number; close: () => Promise<void> }> {
  let bytes = 0
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length))
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bytes: () => bytes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** Returns a markdown table; "tracing off" is the baseline of the ratios. */
export async function runTracesCostBench(): Promise<string> {
  const children: Child[] = []
  const sink = await startSink()
  const before = process.env.SLUICE_BENCH_BEFORE
  const variants =
    before === undefined
      ? VARIANTS
      : [...VARIANTS, { name: `before (${before})`, env: () => ({}), main: join(before, 'dist/main.js') }]
  try {
    const sim = await startSimChild()
    children.push(sim)
    const targets: TurnTarget[] = []
    for (const v of variants) {
      const sluice = await startSluiceChild(
        `${sim.url}/v2`,
        { SLUICE_REQUEST_LOG: 'false', ...v.env(sink.url) },
        v.main,
      )
      children.push(sluice)
      targets.push({ name: v.name, url: sluice.url, pid: sluice.pid })
    }
    const lines = [
      `| variant | conns | req/s | p50 ms | proxy CPU µs / request | vs off: req/s | vs off: p50 | vs off: CPU / request |`,
      '|---|---:|---:|---:|---:|---:|---:|---:|',
    ]
    for (const connections of [1, 64]) {
      const figures = await measureInTurns(targets, { connections, rounds: ROUNDS, roundMs: ROUND_MS, baseline: 0 })
      for (const [i, t] of targets.entries()) {
        const f = figures[i]!
        const v = f.vsBaseline
        lines.push(
          `| ${t.name} | ${connections} | ${f.rps.toFixed(0)} | ${f.p50Ms.toFixed(3)} | ${f.cpuUsPerRequest.toFixed(1)} | ${percent(v.rps)} | ${signedMs(v.p50Ms)} | ${percent(v.cpu)} |`,
        )
      }
    }
    // the sampled variant's batches, flushed when it stops
    await Promise.all(children.map((c) => c.stop()))
    lines.push(
      '',
      `OTLP bytes the collector stand-in received: ${(sink.bytes() / 1e6).toFixed(1)} MB (every request of the sampled variant: three spans).`,
    )
    return lines.join('\n')
  } finally {
    await Promise.all(children.map((c) => c.stop()))
    await sink.close()
  }
}
