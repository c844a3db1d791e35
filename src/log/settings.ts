import { z } from 'zod'

/** Settings of the log (docs/observability.md, "Logs"). */
export const logSettingsShape = {
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** one JSON log line per request (the access log) */
  requestLog: z.boolean().default(true),
}
