import { tracingSettingsFromEnv } from './settings.js'
import type { TracingDeps } from './sdk.js'
import type { Tracing } from './types.js'

export type { AttemptSpan, RequestEnd, RequestSpans, Tracing } from './types.js'

/**
 * Tracing as the OTEL_* variables ask (docs/observability.md, "Traces"), or undefined when they do
 * not: then the SDK is not even loaded, and the proxy's cost is a few checks of `undefined`.
 * Throws a ConfigError naming a variable that cannot be used.
 */
export async function startTracing(
  env: Readonly<Record<string, string | undefined>>,
  deps: TracingDeps,
): Promise<Tracing | undefined> {
  const settings = tracingSettingsFromEnv(env)
  if (settings === undefined) return undefined
  const { createTracing } = await import('./sdk.js')
  return createTracing(settings, deps)
}
