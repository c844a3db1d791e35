import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A tiny OTLP/HTTP receiver, as a collector would be: it keeps every export's bytes and answers
 * each with an empty success (`{}` to JSON, an empty message to protobuf).
 */

export interface OtlpExport {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
}

/** An OTLP/JSON attribute value (the encoding of the OTLP specification; 64-bit ints may come as strings). */
type AnyValue = { stringValue?: string; boolValue?: boolean; intValue?: number | string; doubleValue?: number }

export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  /** 1 internal, 2 server, 3 client */
  readonly kind: number
  readonly attributes: Record<string, string | number | boolean>
  readonly events: { name: string; attributes: Record<string, string | number | boolean> }[]
  /** 0 unset, 1 ok, 2 error */
  readonly status: number
  readonly startNs: bigint
  readonly resource: Record<string, string | number | boolean>
}

export interface OtlpReceiver {
  /** http://127.0.0.1:PORT (the collector's root) */
  readonly url: string
  readonly exports: OtlpExport[]
  /** every span of the JSON exports so far, decoded */
  spans(): ReceivedSpan[]
  close(): Promise<void>
}

type Kv = { key: string; value: AnyValue }
const valueOf = (v: AnyValue): string | number | boolean =>
  v.stringValue ?? v.boolValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? ''))
const record = (kvs: Kv[] | undefined): Record<string, string | number | boolean> =>
  Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueOf(kv.value)]))

interface JsonSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  startTimeUnixNano: string | number
  attributes?: Kv[]
  events?: { name: string; attributes?: Kv[] }[]
  status?: { code?: number }
}
interface JsonExport {
  resourceSpans: { resource?: { attributes?: Kv[] }; scopeSpans: { spans: JsonSpan[] }[] }[]
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const exports: OtlpExport[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      exports.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) })
      const json = req.headers['content-type']?.includes('json') === true
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' })
      res.end(json ? '{}' : '')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    exports,
    spans: () =>
      exports
        .filter((e) => e.headers['content-type']?.includes('json') === true)
        .flatMap((e) =>
          (JSON.parse(e.body.toString('utf8')) as JsonExport).resourceSpans.flatMap((rs) =>
            rs.scopeSpans.flatMap((ss) =>
              ss.spans.map((s): ReceivedSpan => ({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId === '' ? undefined : s.parentSpanId,
                name: s.name,
                kind: s.kind,
                attributes: record(s.attributes),
                events: (s.events ?? []).map((e) => ({ name: e.name, attributes: record(e.attributes) })),
                status: s.status?.code ?? 0,
                startNs: BigInt(s.startTimeUnixNano),
                resource: record(rs.resource?.attributes),
              })),
            ),
          ),
        ),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
