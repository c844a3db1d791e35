import { originOf } from './config/load.js'
import type { Settings } from './config/schema.js'
import { maskSecretText } from './log/secret-text.js'

/**
 * Start-up failures as one line each (README "Settings": exit code 78 and a message naming the
 * cause, and for a setting where its value came from). Never a stack trace: an operator reads the
 * line in `kubectl logs` or a terminal, and a stack can carry a connection string.
 */

/** EX_CONFIG (sysexits.h): the process cannot start as configured. */
export const START_FAILURE_EXIT_CODE = 78

/** A server could not listen; names the settings that say where. */
export class ListenError extends Error {
  constructor(
    readonly server: 'proxy' | 'admin' | 'health',
    readonly host: string,
    readonly port: number,
    override readonly cause: unknown,
  ) {
    super(`cannot listen on ${host}:${port}`)
    this.name = 'ListenError'
  }
}

const LISTEN_KEYS = {
  proxy: ['host', 'port'],
  admin: ['adminHost', 'adminPort'],
  health: ['healthHost', 'healthPort'],
} as const

const LISTEN_CAUSES: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the port is in use by another process',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'no interface of this machine has that address',
  ENOTFOUND: 'the host name does not resolve',
}

const oneLine = (text: string): string =>
  text
    .replace(/:\s*\n\s*-\s*/g, ': ')
    .replace(/\n\s*-\s*/g, '; ')
    .replace(/\s*\n\s*/g, ' ')
    .trim()

/** The one line (without the `sluice: ` prefix) for an error that stopped the start. */
export function describeStartFailure(err: unknown, settings: Settings | undefined): string {
  if (err instanceof ListenError) {
    const [hostKey, portKey] = LISTEN_KEYS[err.server]
    const where = (key: string): string =>
      settings === undefined ? key : `${key} from ${originOf(settings, key) ?? 'the default'}`
    const code = (err.cause as { code?: unknown }).code
    const why = typeof code === 'string' ? (LISTEN_CAUSES[code] ?? code) : String(err.cause)
    const what = { proxy: 'the proxy', admin: 'the admin server', health: 'the health port' }[err.server]
    return `${what} cannot listen on ${err.host}:${err.port} (${where(hostKey)}, ${where(portKey)}): ${why}`
  }
  const e = err as { code?: unknown; message?: unknown }
  const message = typeof e.message === 'string' ? e.message : String(err)
  if (e.code === 'SLUICE_CONFIG_UNKNOWN_OVERRIDE' && settings !== undefined) {
    const origin = originOf(settings, 'limits.overrides')
    return maskSecretText(oneLine(`${message}${origin ? ` (${origin})` : ''}`))
  }
  if (typeof e.code === 'string' && e.code.startsWith('SLUICE_')) return maskSecretText(oneLine(message))
  return `failed to start: ${maskSecretText(oneLine(message))}`
}
