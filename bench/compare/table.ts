import type { CompareResults, ContentionRow } from './index.js'
import { FLOOD, type FloodFigures, type MemoryReading } from './flood.js'
import type { TurnFigures } from '../turns.js'

const MB = 1024 * 1024
const f3 = (v: number | null | undefined): string =>
  v === null || v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(3)
const f2 = (v: number | null | undefined): string =>
  v === null || v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(2)
const mb = (bytes: number): string => `${(bytes / MB).toFixed(0)} MB`
const kb = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KB`

const backToIdle = (x: FloodFigures): string =>
  x.backToIdleMs === undefined
    ? `not within the watch (${mb(x.settled.rss)} at its end)`
    : `${mb(x.settled.rss)} after ${(x.backToIdleMs / 1000).toFixed(0)} s`

const rowsOf = (r: CompareResults, prefix: string): ContentionRow[] =>
  r.contention.filter((c) => c.setup.startsWith(prefix))

/** min–max of a figure over rows (one value when they agree, – when none has it) */
function range(
  rows: readonly ContentionRow[],
  figure: (c: ContentionRow) => number | null | undefined,
  format: (v: number) => string,
): string {
  const values = rows.map(figure).filter((v): v is number => v !== null && v !== undefined && Number.isFinite(v))
  if (values.length === 0) return '–'
  const lo = format(Math.min(...values))
  const hi = format(Math.max(...values))
  return lo === hi ? lo : `${lo}–${hi}`
}

const ratio = (c: ContentionRow): number => c.limit1P99Ms / c.limit1P50Ms

/** One row per setup: the ranges over its runs of the figures the targets are set on. */
export function rangesTable(r: CompareResults): string {
  const setups = [...new Set(r.contention.map((c) => c.setup))]
  const lines = [
    '| setup | runs | lowest key utilisation | limit-1 keys | limit-5 keys | limit-1 request time p99 ÷ p50 (p50 ms) | handoff idle p50 ms | Redis CPU µs / request | Redis commands / request | proxy CPU µs / request |',
    '|---|---:|---|---|---|---|---|---|---|---|',
  ]
  for (const setup of setups) {
    const rows = r.contention.filter((c) => c.setup === setup)
    lines.push(
      `| ${setup} | ${rows.length} | ${range(rows, (c) => c.minUtilisation, f3)} | ${range(rows, (c) => c.minUtilisationByLimit[1], f3)} | ${range(rows, (c) => c.minUtilisationByLimit[5], f3)} | ${range(rows, ratio, f2)} (${range(
        rows,
        (c) => c.limit1P50Ms,
        (v) => v.toFixed(0),
      )}) | ${range(rows, (c) => c.handoffP50Ms, f2)} | ${range(
        rows,
        (c) => c.redisCpuUsPerRequest,
        (v) => v.toFixed(0),
      )} | ${range(rows, (c) => c.redisCommandsPerRequest, f2)} | ${range(
        rows,
        (c) => c.proxyCpuUsPerRequest,
        (v) => v.toFixed(0),
      )} |`,
    )
  }
  return lines.join('\n')
}

/** The summary: one row per figure, HAProxy / redis-semaphore / sluice side by side. */
export function summaryTable(r: CompareResults): string {
  const ha = rowsOf(r, 'HAProxy')
  const floor = rowsOf(r, 'floor')
  const sem = rowsOf(r, 'redis-semaphore pass-through, 3 ')
  const mem = rowsOf(r, 'sluice, 1 replica')
  const red = rowsOf(r, 'sluice, 3 replicas')
  const u = (rows: ContentionRow[]): string => range(rows, (c) => c.minUtilisation, f3)
  const hand = (rows: ContentionRow[]): string =>
    `${range(rows, (c) => c.handoffP50Ms, f2)} / ${range(rows, (c) => c.handoffP99Ms, f2)}`
  const cmds = (rows: ContentionRow[]): string => range(rows, (c) => c.redisCommandsPerRequest, f2)
  const t = r.throughput
  const tp = (i: number): string => (t?.figures[i] ? t.figures[i].vsBaseline.rps.toFixed(2) : '–')
  const floodMem = r.flood.find((x) => x.setup === 'sluice, in-process')?.figures
  const floodRed = r.flood.find((x) => x.setup === 'sluice, Redis')?.figures
  const flood = (x: typeof floodMem): string =>
    x
      ? `${mb(x.queued.rss)} queued (${mb(x.idle.rss)} idle), ${mb(x.peakRss)} peak while draining, ${mb(x.after.rss)} 10 s after, ${backToIdle(x)}; ${kb(x.heapPerWaiter)} heap / ${kb(x.rssPerWaiter)} RSS per waiter`
      : '–'
  const lines = [
    '| figure | HAProxy 1 node | floor: bare Node + FIFO semaphore, 1 process | redis-semaphore, 3 processes | sluice | target |',
    '|---|---|---|---|---|---|',
    `| contention (2 orgs × 4 keys, limits 1/5, 60 loops, API 50 ms): lowest utilisation of a key (range over the runs) | ${ha.length > 0 ? u(ha) : r.haproxySkipped ? 'skipped' : '–'} | ${u(floor)} | ${u(sem)} | ${u(red)} (3 replicas, Redis); ${u(mem)} (1 replica, in-process) | ≥ 0.985 on Redis, ≥ 0.99 in-process |`,
    `| handoff idle at the API (a slot freed → the next request arrives), p50 / p99 ms | ${ha.length > 0 ? hand(ha) : '–'} | ${hand(floor)} | ${hand(sem)} | ${hand(red)} (Redis); ${hand(mem)} (in-process) | p50 ≤ 1 across replicas, ≤ 0.3 in-process |`,
    `| Redis commands per proxied request (contention, INFO commandstats) | – | – | ${cmds(sem)} | ${cmds(red)}${red[0]?.redisCalls ? ` (${f2(scripts(red[0]) / Math.max(1, red[0].requests))} scripts)` : ''} | ≤ 8, ≤ 2 round trips |`,
    `| uncontended throughput (32 connections, limited endpoint, one org each), proxy ÷ bare Node pass-through | – | Redis floors ÷ bare: two round trips of a script doing nothing ${tp(4)}, sluice's two scripts alone ${tp(5)}, its reuse script alone (a kept permit) ${tp(6)} | ${tp(3)} | ${tp(2)} with Redis, ${tp(1)} in-process (Redis ÷ in-process ${t ? t.redisVsMemory.toFixed(2) : '–'}) | Redis ≥ 0.8 of in-process |`,
    `| RSS with ${FLOOD.toLocaleString('en')} requests queued on one key | – | – | – | in-process: ${flood(floodMem)}; Redis: ${flood(floodRed)} | ≤ 150 MB, back to idle after |`,
  ]
  if (r.haproxySkipped) lines.push('', `HAProxy: skipped — ${r.haproxySkipped}.`)
  return lines.join('\n')
}

const scripts = (row: ContentionRow): number =>
  (row.redisCalls?.get('evalsha') ?? 0) + (row.redisCalls?.get('eval') ?? 0)

export function contentionTable(r: CompareResults): string {
  const lines = [
    '| setup (run) | requests | lowest utilisation (key) | lowest, limit-1 keys | lowest, limit-5 keys | handoff idle p50 / p99 ms (handoffs) | most in progress ≤ limit | API 429s | client answers ≠ 200 | proxy CPU µs / request | Redis commands / request | Redis CPU µs / request |',
    '|---|---:|---|---:|---:|---|---|---:|---:|---:|---:|---:|',
  ]
  for (const c of r.contention) {
    lines.push(
      `| ${c.setup}${c.run === undefined ? '' : ` (${c.run})`} | ${c.requests} | ${f3(c.minUtilisation)} (${c.minKey}) | ${f3(c.minUtilisationByLimit[1])} | ${f3(c.minUtilisationByLimit[5])} | ${f2(c.handoffP50Ms)} / ${f2(c.handoffP99Ms)} (${c.handoffs}) | ${c.overLimit ? '**no**' : 'yes'} | ${c.upstream429s} | ${c.clientNon200} | ${c.proxyCpuUsPerRequest.toFixed(0)} | ${f2(c.redisCommandsPerRequest)} | ${c.redisCpuUsPerRequest === undefined ? '–' : c.redisCpuUsPerRequest.toFixed(0)} |`,
    )
  }
  return lines.join('\n')
}

/** a round-by-round median with its quartiles: `0.55 (0.52–0.58)` */
const withQuartiles = (median: number, q: readonly [number, number], digits: number): string =>
  `${median.toFixed(digits)} (${q[0].toFixed(digits)}–${q[1].toFixed(digits)})`

const redisCpu = (x: TurnFigures): string =>
  x.redisCpuUsPerRequest === undefined ? '–' : x.redisCpuUsPerRequest.toFixed(0)

export function throughputTable(r: CompareResults): string {
  const t = r.throughput
  if (!t) return ''
  const lines = [
    '32 connections (medians over the rounds; ÷ bare round by round, with its quartiles):',
    '',
    '| target | req/s | p50 ms | p99 ms | non-200 | CPU µs / request | Redis CPU µs / request | ÷ bare: req/s | ÷ bare: CPU / request |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  t.names.forEach((name, i) => {
    const x = t.figures[i]!
    const q = x.vsBaselineQuartiles
    lines.push(
      `| ${name} | ${x.rps.toFixed(0)} | ${x.p50Ms.toFixed(3)} | ${x.p99Ms.toFixed(3)} | ${x.failed} | ${x.cpuUsPerRequest.toFixed(0)} | ${redisCpu(x)} | ${withQuartiles(x.vsBaseline.rps, q.rps, 2)} | ${withQuartiles(x.vsBaseline.cpu, q.cpu, 2)} |`,
    )
  })
  lines.push(
    '',
    'One connection at a time (added p50: the target’s p50 less the bare pass-through’s, round by round):',
    '',
    '| target | req/s | p50 ms | added p50 ms | non-200 | CPU µs / request | Redis CPU µs / request |',
    '|---|---:|---:|---:|---:|---:|---:|',
  )
  t.names.forEach((name, i) => {
    const x = t.oneAtATime[i]!
    lines.push(
      `| ${name} | ${x.rps.toFixed(0)} | ${x.p50Ms.toFixed(3)} | ${withQuartiles(x.vsBaseline.p50Ms, x.vsBaselineQuartiles.p50Ms, 3)} | ${x.failed} | ${x.cpuUsPerRequest.toFixed(0)} | ${redisCpu(x)} |`,
    )
  })
  return lines.join('\n')
}

export function floodTable(r: CompareResults): string {
  const lines = [
    `| setup | RSS idle | RSS, ${FLOOD.toLocaleString('en')} held | RSS peak (drain included) | RSS 10 s after | back to idle (RSS ≤ idle + 10%) | heap used idle / held / 10 s after (garbage included) | per held request: heap / RSS | answers ≠ 200 |`,
    '|---|---:|---:|---:|---:|---|---|---|---:|',
  ]
  for (const { setup, figures: x } of r.flood) {
    lines.push(
      `| ${setup} | ${mb(x.idle.rss)} | ${mb(x.queued.rss)} | ${mb(x.peakRss)} | ${mb(x.after.rss)} | ${backToIdle(x)} | ${mb(x.idle.heapUsed)} / ${mb(x.queued.heapUsed)} / ${mb(x.after.heapUsed)} | ${kb(x.heapPerWaiter)} / ${kb(x.rssPerWaiter)} | ${x.non200} |`,
    )
  }
  return lines.join('\n')
}

/** Where each process's resident memory is, idle → held → after: what is not given back after the flood. */
export function floodResidentTable(r: CompareResults): string {
  const lines = [
    '| setup (idle → held → back to idle, or at the end of the watch) | RSS | malloc main heap (`[heap]`) | other anonymous (V8 pages, mmapped malloc, arenas) | file-backed | V8 committed (new space / old space) | external |',
    '|---|---|---|---|---|---|---|',
  ]
  const three = (f: (m: MemoryReading) => number, x: FloodFigures): string =>
    `${mb(f(x.idle))} → ${mb(f(x.queued))} → ${mb(f(x.settled))}`
  for (const { setup, figures: x } of r.flood) {
    lines.push(
      `| ${setup} | ${three((m) => m.rss, x)} | ${three((m) => m.mallocHeap, x)} | ${three((m) => m.anon, x)} | ${three((m) => m.file, x)} | ${three((m) => m.heapTotal, x)} (${three((m) => m.newSpace, x)} / ${three((m) => m.oldSpace, x)}) | ${three((m) => m.external, x)} |`,
    )
  }
  return lines.join('\n')
}

/** Per proxied request: what the replicas sent to Redis, and what each script ran inside Redis. */
export function breakdownTable(r: CompareResults): string {
  const b = r.breakdown
  if (!b) return ''
  const per = (n: number): string => (n / Math.max(1, b.requests)).toFixed(2)
  const sent = [...b.sent].sort((x, y) => y[1] - x[1])
  const roundTrips = sent.reduce((n, [, c]) => n + c, 0)
  const lines = [
    `${b.requests} proxied requests under MONITOR; ${per(roundTrips)} commands sent (round trips, pipelined or not) per request:`,
    '',
    '| sent by the replicas | per request |',
    '|---|---:|',
    ...sent.map(([name, c]) => `| ${name} | ${per(c)} |`),
    '',
    '| inside the scripts: script: command | per request | per call of the script |',
    '|---|---:|---:|',
  ]
  for (const [key, c] of [...b.inScripts].sort((x, y) => y[1] - x[1])) {
    const script = key.slice(0, key.indexOf(':'))
    lines.push(`| ${key} | ${per(c)} | ${(c / Math.max(1, b.scriptCalls.get(script) ?? 0)).toFixed(2)} |`)
  }
  lines.push(
    '',
    '| script (SLOWLOG, MONITOR running too) | calls per request | µs per call | µs per request |',
    '|---|---:|---:|---:|',
  )
  for (const [script, t] of [...b.scriptTimes].sort((x, y) => y[1].us - x[1].us)) {
    lines.push(`| ${script} | ${per(t.calls)} | ${(t.us / Math.max(1, t.calls)).toFixed(1)} | ${per(t.us)} |`)
  }
  if (b.floor !== undefined) {
    const f = b.floor
    lines.push(
      '',
      `| floor: a release granting the head + a queued acquire, limit 1, a cycle every ${f.cadenceMs.toFixed(2)} ms, ${f.cycles} cycles a run (./script-floor.ts) | Redis CPU µs a cycle, each run | of which inside EVALSHA |`,
      '|---|---:|---:|',
      ...f.rows.map(
        (row) =>
          `| ${row.pair} | ${row.usPerCycle.map((v) => v.toFixed(0)).join(', ')} | ${row.evalUsPerCycle.map((v) => v.toFixed(1)).join(', ')} |`,
      ),
    )
  }
  if (b.profile !== undefined) {
    const busy = b.profile.filter((p) => p.place !== '(idle)' && p.place !== '(program)').reduce((n, p) => n + p.ms, 0)
    lines.push(
      '',
      '| one replica, self time (`--cpu-prof`, its whole life: start and warm-up included) | ms | share of the busy time |',
      '|---|---:|---:|',
    )
    for (const p of b.profile.slice(0, 20))
      lines.push(
        `| ${p.place} | ${p.ms.toFixed(0)} | ${p.place.startsWith('(idle') ? '–' : `${((100 * p.ms) / Math.max(1, busy)).toFixed(1)}%`} |`,
      )
  }
  return lines.join('\n')
}
