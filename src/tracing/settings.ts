import { ConfigError } from '../errors/config-error.js'

/**
 * Traces are configured by the standard OpenTelemetry variables, not by sluice settings
 * (docs/observability.md, "Traces"): the ones read here decide whether the SDK starts and how; the
 * exporter reads the rest itself (headers, timeout, compression, certificates), and the batch
 * processor its OTEL_BSP_* and the span limits.
 */

/** The samplers of the OpenTelemetry SDK specification, as OTEL_TRACES_SAMPLER names them. */
export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const
export type SamplerName = (typeof SAMPLERS)[number]

/** The OTLP transports this build sends with. */
export const PROTOCOLS = ['http/protobuf', 'http/json'] as const
export type Protocol = (typeof PROTOCOLS)[number]

export interface TracingSettings {
  /** where spans go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces` */
  readonly url: string
  readonly protocol: Protocol
  readonly sampler: SamplerName
  /** OTEL_TRACES_SAMPLER_ARG, for the ratio samplers (default 1) */
  readonly ratio: number
  /** OTEL_SERVICE_NAME, else `service.name` of OTEL_RESOURCE_ATTRIBUTES, else `sluice` */
  readonly serviceName: string
  /** OTEL_RESOURCE_ATTRIBUTES, decoded */
  readonly resourceAttributes: Readonly<Record<string, string>>
}

/** The specification's default for OTLP over HTTP. */
export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318'
export const DEFAULT_SERVICE_NAME = 'sluice'
const DEFAULT_SAMPLER: SamplerName = 'parentbased_always_on'

type Env = Readonly<Record<string, string | undefined>>

const invalid = (name: string, problem: string): ConfigError =>
  new ConfigError(`${name} (from the environment): ${problem}`, [name])

/** A variable's value, trimmed; undefined when unset or empty (the specification treats empty as unset). */
function read(env: Env, name: string): string | undefined {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? undefined : value
}

/**
 * The tracing settings, or undefined when tracing is off: off unless OTEL_TRACES_EXPORTER is `otlp`
 * or an OTLP endpoint is set, and always off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
 * (The specification's default exporter is `otlp`; sluice starts no SDK until asked, so that an
 * unconfigured proxy pays nothing.) Throws a ConfigError naming the variable.
 */
export function tracingSettingsFromEnv(env: Env): TracingSettings | undefined {
  const disabled = read(env, 'OTEL_SDK_DISABLED')?.toLowerCase()
  if (disabled !== undefined && disabled !== 'true' && disabled !== 'false')
    throw invalid('OTEL_SDK_DISABLED', `"${disabled}" is neither true nor false`)
  if (disabled === 'true') return undefined

  const exporter = read(env, 'OTEL_TRACES_EXPORTER')?.toLowerCase()
  const specific = read(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
  const general = read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT')
  if (exporter === 'none') return undefined
  if (exporter !== undefined && exporter !== 'otlp')
    throw invalid('OTEL_TRACES_EXPORTER', `"${exporter}" is not an exporter sluice has (otlp, none)`)
  if (exporter === undefined && specific === undefined && general === undefined) return undefined

  return {
    url:
      specific !== undefined
        ? httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', specific)
        : withTracesPath(httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', general ?? DEFAULT_OTLP_ENDPOINT)),
    protocol: protocolOf(env),
    sampler: samplerOf(env),
    ratio: ratioOf(env),
    ...resourceOf(env),
  }
}

const NOT_HTTP = 'not an http:// or https:// URL (sluice sends OTLP over HTTP)'

/** The URL as given, when it is http(s); its text is not repeated in the error (it may carry a token). */
function httpUrl(name: string, value: string): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw invalid(name, NOT_HTTP)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(name, NOT_HTTP)
  return url.href
}

/** OTEL_EXPORTER_OTLP_ENDPOINT is the collector's root: the signal's path is appended (the specification's rule). */
const withTracesPath = (base: string): string => (base.endsWith('/') ? base : `${base}/`) + 'v1/traces'

function protocolOf(env: Env): Protocol {
  const name =
    read(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== undefined
      ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
      : 'OTEL_EXPORTER_OTLP_PROTOCOL'
  const value = read(env, name)?.toLowerCase() ?? 'http/protobuf'
  if (!(PROTOCOLS as readonly string[]).includes(value))
    throw invalid(name, `"${value}" is not a protocol sluice sends (${PROTOCOLS.join(', ')}; grpc is not built in)`)
  return value as Protocol
}

function samplerOf(env: Env): SamplerName {
  const value = read(env, 'OTEL_TRACES_SAMPLER')?.toLowerCase() ?? DEFAULT_SAMPLER
  if (!(SAMPLERS as readonly string[]).includes(value))
    throw invalid('OTEL_TRACES_SAMPLER', `"${value}" is not a sampler sluice knows (${SAMPLERS.join(', ')})`)
  return value as SamplerName
}

function ratioOf(env: Env): number {
  const value = read(env, 'OTEL_TRACES_SAMPLER_ARG')
  if (value === undefined) return 1
  const ratio = Number(value)
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1)
    throw invalid('OTEL_TRACES_SAMPLER_ARG', `"${value}" is not a ratio from 0 to 1`)
  return ratio
}

/** OTEL_RESOURCE_ATTRIBUTES (`key=value,key=value`, values percent-encoded) and the service name over it. */
function resourceOf(env: Env): { serviceName: string; resourceAttributes: Record<string, string> } {
  const resourceAttributes: Record<string, string> = {}
  const text = read(env, 'OTEL_RESOURCE_ATTRIBUTES')
  for (const pair of text === undefined ? [] : text.split(',')) {
    if (pair.trim() === '') continue
    const eq = pair.indexOf('=')
    const key = eq < 0 ? '' : pair.slice(0, eq).trim()
    // Only the key is named: a value may be anything the operator put there.
    if (key === '') throw invalid('OTEL_RESOURCE_ATTRIBUTES', 'every entry must be key=value')
    try {
      resourceAttributes[key] = decodeURIComponent(pair.slice(eq + 1).trim())
    } catch {
      throw invalid('OTEL_RESOURCE_ATTRIBUTES', `the value of ${key} is not percent-encoded correctly`)
    }
  }
  const serviceName = read(env, 'OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? DEFAULT_SERVICE_NAME
  return { serviceName, resourceAttributes }
}
