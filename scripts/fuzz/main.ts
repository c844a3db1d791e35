import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { fuzzFailed, fuzzHttpFront, noCounts, type FuzzCounts } from './front.js'

/**
 * `npm run fuzz`: the raw-socket fuzz of sluice's HTTP front on loopback. Stops by itself after
 * FUZZ_INPUTS inputs (1,000,000) or FUZZ_MAX_MINUTES (60), prints the counts, exits 1 on a failure.
 * FUZZ_WORKERS processes (1) each fuzz their own proxy (built in the worker's process; with
 * FUZZ_PROXY=child, `node dist/main.js`, which `npm run fuzz` builds first) with their share of the
 * inputs and their own seed (FUZZ_SEED + worker number), FUZZ_CONCURRENCY connections in flight each
 * (32). FUZZ_SEED repeats a run.
 */
const num = (name: string, fallback: number): number => {
  const v = Number(process.env[name] ?? fallback)
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`)
  return v
}
const inputs = num('FUZZ_INPUTS', 1_000_000)
const maxMs = num('FUZZ_MAX_MINUTES', 60) * 60_000
const seed = num('FUZZ_SEED', Date.now() % 2_147_483_647)
const concurrency = num('FUZZ_CONCURRENCY', 32)
const workers = num('FUZZ_WORKERS', 1)

const line = (c: FuzzCounts): string =>
  `${c.inputs} inputs in ${(c.elapsedMs / 1000).toFixed(0)} s (${Math.round(c.inputs / Math.max(1, c.elapsedMs / 1000))}/s); ` +
  `answers ${JSON.stringify(c.answers)}; reached the API ${c.reachedApi}; ` +
  `hangs ${c.hangs}, sluice 5xx ${c.ownServerErrors}, not in the error shape ${c.badShapes}, malformed at the API ${c.malformedAtApi}, crashes ${c.crashes}`

if (process.env.FUZZ_ROLE === 'worker') {
  const counts = await fuzzHttpFront({
    inputs,
    maxMs,
    seed,
    concurrency,
    proxy: process.env.FUZZ_PROXY === 'child' ? 'child' : 'in-process',
    progress: (c) => process.stdout.write(`  [${seed}] ${line(c)}\n`),
  })
  process.stdout.write(`RESULT ${JSON.stringify(counts)}\n`)
  process.exit(0)
}

process.stdout.write(
  `fuzz: ${inputs} inputs at most, ${maxMs / 60_000} min at most, seed ${seed}, ${workers} workers × ${concurrency} connections\n`,
)
const started = Date.now()
const results = await Promise.all(
  Array.from({ length: workers }, (_, i) => {
    const share = Math.floor(inputs / workers) + (i < inputs % workers ? 1 : 0)
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], {
      env: { ...process.env, FUZZ_ROLE: 'worker', FUZZ_INPUTS: String(share), FUZZ_SEED: String(seed + i) },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
      for (;;) {
        const nl = out.indexOf('\n')
        if (nl < 0 || out.startsWith('RESULT ')) break
        process.stdout.write(out.slice(0, nl + 1))
        out = out.slice(nl + 1)
      }
    })
    return new Promise<FuzzCounts>((resolve, reject) =>
      child.once('exit', (code) => {
        const result = /^RESULT (.*)$/m.exec(out)
        if (result === null) reject(new Error(`fuzz worker ${i} exited with ${code} without a result`))
        else resolve(JSON.parse(result[1]!) as FuzzCounts)
      }),
    )
  }),
)

const total = noCounts(Date.now() - started)
for (const r of results) {
  for (const k of [
    'inputs',
    'reachedApi',
    'hangs',
    'ownServerErrors',
    'badShapes',
    'malformedAtApi',
    'crashes',
  ] as const)
    total[k] += r[k]
  for (const [k, v] of Object.entries(r.answers)) total.answers[k] = (total.answers[k] ?? 0) + v
  for (const [k, v] of Object.entries(r.ownStatuses)) total.ownStatuses[k] = (total.ownStatuses[k] ?? 0) + v
  total.examples.push(...r.examples)
}
process.stdout.write(`fuzz done ${new Date().toISOString()}: ${line(total)}\n`)
const sorted = Object.entries(total.ownStatuses).sort((a, b) => b[1] - a[1])
process.stdout.write(`own answers by status and code: ${sorted.map(([k, v]) => `${k}: ${v}`).join(', ')}\n`)
for (const example of total.examples.slice(0, 20)) process.stdout.write(`  ! ${example}\n`)
process.exit(fuzzFailed(total) ? 1 : 0)
