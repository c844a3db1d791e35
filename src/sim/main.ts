/* `npm run sim`: the simulated upstream, set by the SIM_* variables of docs/development.md, "The simulated API". */
import { z } from 'zod'
import { startSim } from './server.js'

const number = (name: string) =>
  z
    .string()
    .trim()
    .regex(/^\d+(\.\d+)?$/, `${name} must be a number`)
    .transform(Number)

const envSchema = z.object({
  SIM_PORT: number('SIM_PORT').pipe(z.number().int().max(65535)).default(8081),
  SIM_HOST: z.string().min(1).default('127.0.0.1'),
  SIM_LATENCY_MS: number('SIM_LATENCY_MS').optional(),
  SIM_JITTER_MS: number('SIM_JITTER_MS').optional(),
  SIM_UNLISTED_LIMIT: number('SIM_UNLISTED_LIMIT').pipe(z.number().int().min(1)).optional(),
  SIM_REJECT_RATIO: number('SIM_REJECT_RATIO').pipe(z.number().max(1)).optional(),
  SIM_GITHUB_CONCURRENCY: number('SIM_GITHUB_CONCURRENCY').pipe(z.number().int().min(1)).optional(),
  SIM_HIDDEN_LIMITS: z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown
      } catch {
        ctx.addIssue({ code: 'custom', message: 'SIM_HIDDEN_LIMITS must be JSON' })
        return z.NEVER
      }
    })
    .pipe(z.record(z.string(), z.record(z.string(), z.number().int().min(1))))
    .optional(),
  SIM_RATES: z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown
      } catch {
        ctx.addIssue({ code: 'custom', message: 'SIM_RATES must be JSON' })
        return z.NEVER
      }
    })
    .pipe(
      z.record(
        z.string(),
        z.object({
          requests: z.number().int().min(1),
          windowMs: z.number().int().min(1),
          fields: z.enum(['ietf', 'x', 'none']).optional(),
        }),
      ),
    )
    .optional(),
})

const parsed = envSchema.safeParse(process.env)
// Like sluice itself: a start-up failure is one line and exit code 78 (EX_CONFIG), never a stack.
function fail(line: string): never {
  process.stderr.write(`sim: ${line}\n`)
  process.exit(78)
}

if (!parsed.success) {
  fail(
    parsed.error.issues
      .map(
        (issue) =>
          `${issue.path.join('.')}: ${issue.message}; got ${JSON.stringify(process.env[String(issue.path[0])])}`,
      )
      .join('; '),
  )
}
const env = parsed.data

const LISTEN_CAUSES: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the port is in use by another process',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'no interface of this machine has that address',
}

const sim = await startSim({
  host: env.SIM_HOST,
  port: env.SIM_PORT,
  latencyMs: env.SIM_LATENCY_MS,
  jitterMs: env.SIM_JITTER_MS,
  unlistedLimit: env.SIM_UNLISTED_LIMIT,
  rejectRatio: env.SIM_REJECT_RATIO,
  hiddenLimits: env.SIM_HIDDEN_LIMITS,
  githubConcurrency: env.SIM_GITHUB_CONCURRENCY,
  rates: env.SIM_RATES,
}).catch((err: unknown) => {
  const code = (err as { code?: unknown }).code
  const why =
    typeof code === 'string'
      ? (LISTEN_CAUSES[code] ?? code)
      : err instanceof Error
        ? err.message.split('\n', 1)[0]
        : String(err)
  return fail(`cannot listen on ${env.SIM_HOST}:${env.SIM_PORT} (SIM_HOST, SIM_PORT): ${why}`)
})
console.log(
  `sim: listening on ${sim.url} — the API is under ${sim.apiUrl} (SLUICE_UPSTREAM=${sim.apiUrl}); ` +
    `latency ${env.SIM_LATENCY_MS ?? 0} ms + jitter ${env.SIM_JITTER_MS ?? 0} ms, ` +
    `unlisted limit ${env.SIM_UNLISTED_LIMIT ?? 'none'}, hidden limits ${env.SIM_HIDDEN_LIMITS === undefined ? 'none' : JSON.stringify(env.SIM_HIDDEN_LIMITS)}, reject ratio ${env.SIM_REJECT_RATIO ?? 0}; stats: GET ${sim.url}/__sim/stats`,
)

function stop(signal: NodeJS.Signals): void {
  console.log(`sim: ${signal}, closing`)
  sim.close().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error('sim: close failed', err)
      process.exit(1)
    },
  )
}
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
