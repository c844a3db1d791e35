import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-base'
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions'
import type { TracingSettings } from './settings.js'
import { requestSpans, type SpanDeps } from './spans.js'
import type { Tracing } from './types.js'

/**
 * The OpenTelemetry SDK, started only when traces are configured (docs/observability.md, "Traces"):
 * a tracer provider with the sampler asked for, a batch span processor and an OTLP/HTTP exporter.
 * Nothing is registered globally (no context manager, no global provider): the proxy hands each
 * span its parent, so tracing costs nothing outside the spans sluice makes.
 */

export interface TracingDeps {
  /** the upstream's URL: its host and port name the server of every client span */
  readonly upstream: string
  /** sluice's version (`service.version`); asked only when tracing starts */
  readonly version: () => string
  /** where the start is confirmed, and the SDK's own warnings go (an exporter that cannot reach its collector) */
  readonly log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void }
}

export function createTracing(settings: TracingSettings, deps: TracingDeps): Tracing {
  const version = deps.version()
  const resource = defaultResource().merge(
    resourceFromAttributes({
      [ATTR_SERVICE_VERSION]: version,
      ...settings.resourceAttributes,
      [ATTR_SERVICE_NAME]: settings.serviceName,
    }),
  )
  // The exporter reads the rest of its OTEL_EXPORTER_OTLP_* variables itself (headers, timeout, compression).
  const exporter =
    settings.protocol === 'http/json'
      ? new JsonExporter({ url: settings.url })
      : new ProtobufExporter({ url: settings.url })
  const provider = new BasicTracerProvider({
    resource,
    sampler: samplerOf(settings),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  })
  diag.setLogger(throttled(deps.log), { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true })
  deps.log.info(
    {
      traces: {
        endpoint: shownEndpoint(settings.url),
        protocol: settings.protocol,
        sampler: settings.sampler,
        ratio: settings.ratio,
        serviceName: settings.serviceName,
      },
    },
    'traces on',
  )
  const spanDeps: SpanDeps = {
    tracer: provider.getTracer('sluice', version),
    propagator: new W3CTraceContextPropagator(),
    upstream: hostAndPort(deps.upstream),
  }
  return {
    request: (method, headers) => requestSpans(spanDeps, method, headers),
    shutdown: () => provider.shutdown(),
  }
}

/** The sampler OTEL_TRACES_SAMPLER names. */
function samplerOf({ sampler, ratio }: TracingSettings): Sampler {
  switch (sampler) {
    case 'always_on':
      return new AlwaysOnSampler()
    case 'always_off':
      return new AlwaysOffSampler()
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio)
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() })
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) })
  }
}

/** The collector's URL for a log line: no userinfo, no query (either may hold a token). */
function shownEndpoint(url: string): string {
  const { origin, pathname } = new URL(url)
  return origin + pathname
}

function hostAndPort(upstream: string): { address: string; port: number } {
  const url = new URL(upstream)
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80
  return { address: url.hostname, port }
}

/** How often the SDK's warnings reach the log: a collector that is down fails every export. */
const DIAG_EVERY_MS = 60_000

/**
 * The SDK's warnings and errors as sluice log lines (masked like every line), one a minute at most,
 * cut short: an exporter's error can carry the collector's whole answer.
 */
function throttled(log: TracingDeps['log']): DiagLogger {
  let last = -Infinity
  let dropped = 0
  const write = (message: string): void => {
    const now = Date.now()
    if (now - last < DIAG_EVERY_MS) return void dropped++
    last = now
    log.warn({ component: 'opentelemetry', droppedSince: dropped }, `traces: ${message.slice(0, 300)}`)
    dropped = 0
  }
  const ignore = (): void => undefined
  return { error: write, warn: write, info: ignore, debug: ignore, verbose: ignore }
}
