#!/usr/bin/env node
/**
 * `npm run versions [-- --date YYYY-MM-DD] [--json]`: the version calendar and what the proxy does
 * today (or on --date) with each version under the configured settings (SLUICE_CONFIG, SLUICE_*).
 */
import { parseArgs } from 'node:util'
import { loadSettings } from './config/load.js'
import { ConfigError } from './errors/config-error.js'
import { createVersioning } from './versioning/index.js'
import { renderSnapshot } from './versioning/render.js'

const USAGE = 'usage: npm run versions [-- --date YYYY-MM-DD] [--json]\n'

function main(): number {
  let values: { date?: string; json?: boolean; help?: boolean }
  try {
    ;({ values } = parseArgs({
      options: { date: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }))
  } catch (err) {
    process.stderr.write(`sluice versions: ${(err as Error).message}\n${USAGE}`)
    return 64 // EX_USAGE
  }
  if (values.help) {
    process.stdout.write(USAGE)
    return 0
  }
  let now: Date | undefined
  if (values.date !== undefined) {
    now = new Date(`${values.date}T12:00:00Z`)
    if (
      !/^\d{4}-\d{2}-\d{2}$/.test(values.date) ||
      Number.isNaN(now.getTime()) ||
      now.toISOString().slice(0, 10) !== values.date
    ) {
      process.stderr.write(`sluice versions: --date must be a date YYYY-MM-DD, got "${values.date}"\n${USAGE}`)
      return 64
    }
  }
  try {
    const settings = loadSettings()
    const quiet = { info() {}, warn() {}, error() {} }
    const versioning = createVersioning(settings.versions, { log: quiet, ...(now ? { now: () => now } : {}) })
    const snapshot = versioning.snapshot()
    process.stdout.write(values.json ? `${JSON.stringify(snapshot, null, 2)}\n` : renderSnapshot(snapshot))
    return 0
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`sluice versions: ${err.message}\n`)
      return 78 // EX_CONFIG
    }
    throw err
  }
}

process.exitCode = main()
