#!/usr/bin/env node
import { buildApp } from './app.js'
import { loadSettings, unknownEnvVars } from './config/load.js'
import type { Settings } from './config/schema.js'
import { maskSecretText } from './log/secret-text.js'
import { startupFields } from './startup-line.js'
import { describeStartFailure, START_FAILURE_EXIT_CODE } from './start-failure.js'

let settings: Settings | undefined
/** the running app's logger, once there is one: a crash is logged through it (redacted, masked) */
let crashLog: { fatal(obj: object, msg: string): void } | undefined

// A crash (an exception nothing caught) is one log line through pino's error serializer, which
// replaces credential-named fields at any depth and masks credentials in free text (README "Admin
// port, metrics and logs"), then exit code 70 (EX_SOFTWARE). Node's own report would print the error
// with util.inspect: a library error carrying its request's headers would print an API key.
process.on('uncaughtException', (err: unknown) => {
  if (crashLog !== undefined) crashLog.fatal({ err }, 'sluice crashed: an exception nothing caught')
  else process.stderr.write(`sluice: crashed: ${maskSecretText(oneLineMessage(err))}\n`)
  process.exit(CRASH_EXIT_CODE)
})

/** EX_SOFTWARE (sysexits.h): an internal error. */
const CRASH_EXIT_CODE = 70

const oneLineMessage = (err: unknown): string =>
  (err instanceof Error
    ? `${err.name}: ${err.message}`
    : typeof err === 'string'
      ? err
      : 'a value that is not an Error'
  ).replace(/\s+/g, ' ')

/** Process entry: settings, app, listen, signals. Anything that stops the start is one line and exit 78. */
async function main(): Promise<void> {
  settings = loadSettings()
  const app = await buildApp(settings, { otelEnv: process.env })
  crashLog = app.proxy.log
  const { proxyUrl, adminUrl, healthUrl } = await app.listen()
  const strays = unknownEnvVars()
  if (strays.length > 0)
    app.proxy.log.warn({ variables: strays }, 'ignoring SLUICE_* variables that are no setting (a typo?)')
  // One line saying what was loaded (docs/observability.md, "What was loaded"); never a secret.
  const loaded = startupFields(settings, {
    limiter: app.limiter.backend,
    apps: app.apps.loaded(),
    egress: app.upstream.egress,
    memoryBudgetBytes: app.budget.limit,
  })
  app.proxy.log.info({ proxyUrl, adminUrl, healthUrl, ...loaded }, 'sluice listening')

  let stopping = false
  const stop = (signal: string): void => {
    if (stopping) return
    stopping = true
    app.proxy.log.info({ signal }, 'shutting down')
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        app.proxy.log.error({ err }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  // SIGHUP re-reads the app token file and the API keys now rather than at the next poll, and says
  // what it found: counts and the names of apps and organisations added, removed or changed.
  process.on('SIGHUP', () => {
    app.proxy.log.info({ ...app.apps.reload(), trigger: 'SIGHUP' }, 'app tokens and API keys re-read')
  })
  // `on`, not `once`: under `npm start` a signal to the process group (Ctrl-C, systemd's stop) comes
  // twice, once forwarded by npm, and a repeat must not meet the default action mid-drain (`stopping`).
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

main().catch((err: unknown) => {
  process.stderr.write(`sluice: ${describeStartFailure(err, settings)}\n`)
  process.exit(START_FAILURE_EXIT_CODE)
})
