/**
 * sluice for bench/tricks/log-writes.ts: `dist/main.js`'s start (settings from the environment,
 * both ports), with its log lines written one write(2) each — pino's own synchronous destination,
 * the plain version of "one write per event-loop turn" — when BENCH_LOG_WRITES=per-line, else as
 * shipped. Both variants start through this file, so they differ in nothing else.
 */
import pino from 'pino'
import type { buildApp as BuildApp } from '../../src/app.js'
import type { loadSettings as LoadSettings } from '../../src/config/load.js'

const dist = new URL('../../dist/', import.meta.url)
const { buildApp } = (await import(new URL('app.js', dist).href)) as { buildApp: typeof BuildApp }
const { loadSettings } = (await import(new URL('config/load.js', dist).href)) as { loadSettings: typeof LoadSettings }

const perLine = process.env.BENCH_LOG_WRITES === 'per-line'
// SonicBoom is the stream pino writes to by default; it has the write() buildApp calls.
const logStream = perLine ? (pino.destination({ dest: 1, sync: true }) as unknown as NodeJS.WritableStream) : undefined
const app = await buildApp(loadSettings(), logStream ? { logStream } : {})
await app.listen()
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))
