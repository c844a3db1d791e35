/**
 * `npm run bench`: every benchmark of the project in one run, printed as markdown tables.
 * Figures on a shared 2-core machine are noisy: compare rows of one run with each other (ratios),
 * not with another run. SLUICE_BENCH_ROUNDS and SLUICE_BENCH_DURATION_MS set the rounds of the
 * proxy benchmarks and the measured time of each (default 30 rounds of 500 ms per target).
 */
import { startRedis } from '../test/support/redis.js'
import { coreTable, runCoreBench } from './core.js'
import { runFairnessBench } from './fairness.js'
import { runMetricsCostBench } from './metrics/proxy-cost.js'
import { runLearningBench } from './learning.js'
import { runPermitsBench } from './permits/main.js'
import { runRatesBench } from './rates/main.js'
import { runRedisBench } from './redis/index.js'
import { runReplicasBench } from './redis/replicas.js'
import { runTricksBench } from './tricks/index.js'
import { runTracesCostBench } from './traces/proxy-cost.js'
import { spanMemoryPerQueuedRequest } from './traces/span-memory.js'

/** Three upstreams besides the CRM's, for the core bench; none is called (their hosts are never reached). */
const MORE_UPSTREAMS = [
  { name: 'trial', prefix: '/trial/v2', url: 'http://127.0.0.1:9/v2', profile: 'neon-v2' },
  { name: 'github', prefix: '/github', url: 'http://127.0.0.1:9', profile: 'github-rest' },
  { name: 'reports', prefix: '/reports/v1', url: 'http://127.0.0.1:9/v1', catalog: { default: 4 } },
]

async function main(): Promise<void> {
  // `npm run bench -- core`, `-- metrics`, `-- traces`, `-- tricks`, `-- redis`, `-- permits`, `-- fairness`, `-- learning`, `-- memory`, `-- shares`, `-- sizing`, `-- rates` or `-- compare` runs one part; `-- scale [sizes]` runs only on its own.
  const only = process.argv[2]
  const out = (s: string): boolean => process.stdout.write(`${s}\n`)
  out(`# sluice benchmarks — node ${process.version}, ${new Date().toISOString()}\n`)

  if (only === 'scale') {
    // not in the full run: its default sizes take several minutes (bench/scale/index.ts)
    const { runScaleBench, scaleSizes, scaleTable } = await import('./scale/index.js')
    const sizes = scaleSizes(process.argv[3])
    out(
      '## Many keys touched once: one replica as `npm start` runs it, sim at 20 ms, then a scrape and /status with a probe every 10 ms\n',
    )
    out(scaleTable(await runScaleBench(sizes, (line) => process.stderr.write(`${line}\n`))))
    out('')
  }

  if (only === undefined || only === 'compare') {
    // loaded only for this part: its flood needs Node 22 (node:module's stripTypeScriptTypes), the other parts run on older Nodes too
    const { runCompare } = await import('./compare/index.js')
    const {
      breakdownTable,
      contentionTable,
      floodResidentTable,
      floodTable,
      rangesTable,
      summaryTable,
      throughputTable,
    } = await import('./compare/table.js')
    const r = await runCompare((line) => process.stderr.write(`${line}\n`))
    out(
      '## sluice beside HAProxy and redis-semaphore (one run; the 2 cores are shared by the load generator, the sim, the proxies and Redis)\n',
    )
    out(summaryTable(r))
    out(
      '\n### Contention: 2 organisations × 4 endpoints (limits 1 and 5), 60 client loops, API 50 ms — ranges over the runs, setups interleaved\n',
    )
    out(rangesTable(r))
    out('\nEvery run, what the API saw:\n')
    out(contentionTable(r))
    out(
      '\n### Uncontended: 32 connections, one organisation each, a limit-5 endpoint, API at 0 ms (in turns, medians of the rounds)\n',
    )
    out(throughputTable(r))
    out('\n### 5,000 requests queued on one key, beside bare servers holding as many\n')
    out(floodTable(r))
    out('\nResident memory by kind, idle → held → back to idle (or at the end of the watch):\n')
    out(floodResidentTable(r))
    out('\n### What a proxied request costs in Redis (sluice, 3 replicas, the contention scenario)\n')
    out(breakdownTable(r))
    out('')
  }

  if (only === undefined || only === 'core') {
    const redis = await startRedis()
    try {
      const rows = await runCoreBench([
        { name: 'sluice, Redis limiter', env: { SLUICE_REDIS_URL: redis.url } },
        // the CRM's path with three more upstreams configured: routing by prefix and the upstream label (docs/upstreams.md, "Cost")
        { name: 'sluice, 3 more upstreams', env: { SLUICE_UPSTREAMS: JSON.stringify(MORE_UPSTREAMS) } },
      ])
      out(
        '## Proxy overhead (sim at zero latency; each connection its own instance, so no limit binds; targets take turns, medians of the rounds)\n',
      )
      out(coreTable(rows))
      out('')
    } finally {
      await redis.close()
    }
  }

  if (only === undefined || only === 'metrics') {
    out('## What metrics and the access log cost (variants interleaved, medians of the rounds)\n')
    out(await runMetricsCostBench())
    out('')
  }

  if (only === undefined || only === 'traces') {
    out('## What traces cost (variants interleaved, medians of the rounds)\n')
    out(await runTracesCostBench())
    out('')
    out(await spanMemoryPerQueuedRequest())
    out('')
  }

  if (only === undefined || only === 'tricks') {
    out('## Hot-path tricks beside their plain versions\n')
    out(await runTricksBench())
    out('')
  }

  if (only === undefined || only === 'redis') {
    out('## Redis limiter: three processes contending for one key, 20 ms upstream\n')
    out(await runRedisBench())
    out('')
    out('## Upstream utilisation through the proxy: 60 clients, sim at 20 ms a request\n')
    out(await runReplicasBench())
    out('')
  }

  if (only === undefined || only === 'learning') {
    out(
      '## Learned limits: three replicas on Redis, the sim keeping 2 (org 1001) and 12 (org 1002) to itself on GET /accounts/{id}/memberships, 24 client loops per org, sim at 40 ms\n',
    )
    out(await runLearningBench())
    out('')
  }

  if (only === undefined || only === 'rates') {
    out(
      '## Rates: what a key without a rate pays, one with a rate in process, and the API allowance a bursty job gets\n',
    )
    out(await runRatesBench())
    out('')
  }

  if (only === undefined || only === 'permits') {
    out('## Permits saved by coalescing and the lookup-list cache (a realistic mix, closed loop)\n')
    out(await runPermitsBench())
    out('')
  }

  if (only === undefined || only === 'memory') {
    out('## The memory budget against resident memory: requests with 1 MiB bodies queued until the budget refuses\n')
    const { holdCostNs, openCostNs, runMemoryBudgetBench } = await import('./memory-budget.js')
    const redis = await startRedis()
    try {
      const budgets = [16, 32, 96, 176].map((m) => ({ budget: m * 1024 * 1024 }))
      out(await runMemoryBudgetBench([...budgets, { budget: 176 * 1024 * 1024, redisUrl: redis.url }]))
    } finally {
      await redis.close()
    }
    const { noBody, body } = holdCostNs()
    out(
      `\nHolding a request in the budget (and giving it back at its answer's close): ${noBody.toFixed(0)} ns without a body, ${body.toFixed(0)} ns with one.`,
    )
    const open = openCostNs()
    out(
      `The drain's list of open requests: ${open.list.toFixed(0)} ns a request (a Set would cost ${open.set.toFixed(0)} ns).`,
    )
    out('')
  }

  if (only === undefined || only === 'shares') {
    out("## Shares: what each app's share of what all apps share costs a request, beside the same work without it\n")
    const { runSharesBench } = await import('./shares.js')
    out(runSharesBench())
    out('')
  }

  if (only === undefined || only === 'sizing') {
    out('## Sizing: CPU per request in process, on Redis, on Redis with a TLS upstream; memory per queued request\n')
    const { runSizingBench } = await import('./sizing.js')
    out(await runSizingBench())
    out('')
  }

  if (only === undefined || only === 'fairness') {
    out(
      "## Fair share between apps: three replicas on Redis, sim at 50 ms, organisation 1001's limit-1 POST /accounts/search\n",
    )
    out(await runFairnessBench())
    out('')
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exit(1)
  },
)
