#!/usr/bin/env node
import { buildApp } from './app.js'
import { loadSettings, unknownEnvVars } from './config/load.js'
import type { Settings } from './config/schema.js'
import { maskUrl } from './log/secret-text.js'
import { describeStartFailure, START_FAILURE_EXIT_CODE } from './start-failure.js'

let settings: Settings | undefined

/** Process entry: settings, app, listen, signals. Anything that stops the start is one line and exit 78. */
async function main(): Promise<void> {
  settings = loadSettings()
  const app = await buildApp(settings)
  const { proxyUrl, adminUrl } = await app.listen()
  const strays = unknownEnvVars()
  if (strays.length > 0) app.proxy.log.warn({ variables: strays }, 'ignoring SLUICE_* variables that are no setting (a typo?)')
  app.proxy.log.info({ proxyUrl, adminUrl, upstream: maskUrl(settings.upstream), limiter: app.limiter.backend }, 'sluice listening')

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
  // SIGHUP re-reads the app token file and the API keys now rather than at the next poll.
  process.on('SIGHUP', () => {
    app.apps.reload()
    app.proxy.log.info('app tokens and API keys re-read (SIGHUP)')
  })
  process.once('SIGTERM', () => stop('SIGTERM'))
  process.once('SIGINT', () => stop('SIGINT'))
}

main().catch((err: unknown) => {
  process.stderr.write(`sluice: ${describeStartFailure(err, settings)}\n`)
  process.exit(START_FAILURE_EXIT_CODE)
})
