#!/usr/bin/env node
import { buildApp } from './app.js'
import { loadSettings, unknownEnvVars } from './config/load.js'
import { ConfigError } from './errors/config-error.js'

/** Process entry: settings, app, listen, signals. A bad setting stops the start with the key named. */
async function main(): Promise<void> {
  let settings
  try {
    settings = loadSettings()
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`sluice: ${err.message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }
  const app = await buildApp(settings)
  const { proxyUrl, adminUrl } = await app.listen()
  const strays = unknownEnvVars()
  if (strays.length > 0) app.proxy.log.warn({ variables: strays }, 'ignoring SLUICE_* variables that are no setting (a typo?)')
  app.proxy.log.info({ proxyUrl, adminUrl, upstream: settings.upstream, limiter: app.limiter.backend }, 'sluice listening')

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
  process.once('SIGTERM', () => stop('SIGTERM'))
  process.once('SIGINT', () => stop('SIGINT'))
}

main().catch((err: unknown) => {
  process.stderr.write(`sluice: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
