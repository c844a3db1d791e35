import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { FastifyError } from 'fastify'
import { badPathError, rawTargetProblem } from '../catalog/index.js'
import { outcomeOf } from '../errors/refusal.js'
import { errorBody } from '../errors/reply.js'
import type { Outcome } from '../record/record.js'
import {
  BadHttpError,
  ExpectationFailedError,
  HeadersTooLargeError,
  MethodNotAllowedError,
  RequestTimeoutError,
  UrlTooLongError,
} from './errors.js'

/** What these answers need of the proxy's RequestTracker (src/proxy/tracking.ts): one record per answer. */
export interface AnswerRecorder {
  /** the request a raw response belongs to, if the proxy is handling one */
  ofResponse(
    res: ServerResponse,
  ): { readonly trace: { answeredWith: number | undefined; outcome: Outcome | undefined } } | undefined
  /** one record for an answer given where no request object exists */
  recordRaw(method: string, headers: IncomingHttpHeaders, status: number, outcome: Outcome): void
}

/**
 * Answers, in the API's error shape, for what Node's HTTP parser refuses before Fastify sees a
 * request, each counted and logged with its status (docs/requests.md, "The proxy's own answers").
 */

export interface ClientErrorOptions {
  /** Node's maxHeaderSize (client.maxHeaderBytes): the request line and headers together */
  readonly maxHeaderBytes: number
  /** counts and logs each answer; absent on the admin port */
  readonly tracker?: AnswerRecorder
  /** the methods the proxy serves, for the `Allow` header of a CONNECT's 405 */
  readonly methods?: readonly string[]
}

type ParseError = Error & { code?: string; rawPacket?: unknown }

const answered = new WeakSet<Duplex>()
// A socket that will not take its answer is closed anyway after this long.
const LINGER_MS = 5_000

export function clientErrorHandler(options: ClientErrorOptions): (err: ParseError, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || !socket.writable) return void socket.destroy()
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined
    if (inFlight?.req.complete === true) {
      // The bytes after a whole request (pipelined, or sent after `Connection: close`) are bad: that
      // request still gets its answer, and then the connection closes.
      if (!inFlight.headersSent) inFlight.shouldKeepAlive = false
      return
    }
    if (answered.has(socket)) return void socket.destroy()
    answered.add(socket)
    const error = answerFor(err, options.maxHeaderBytes)
    const status = error.statusCode ?? 400
    const outcome = outcomeOf(error, status)
    // A request already handed to the proxy (an error found mid-body, a body too slow): its own record says what it
    // got.
    if (inFlight !== undefined && inFlight.headersSent) return void socket.destroy()
    const tracked = inFlight !== undefined ? options.tracker?.ofResponse(inFlight) : undefined
    if (tracked !== undefined) {
      tracked.trace.answeredWith = status
      tracked.trace.outcome = outcome
    } else if (options.tracker !== undefined) {
      const head = headOf(packetOf(err))
      options.tracker.recordRaw(head.method, head.headers, status, outcome)
    }
    writeRaw(socket, status, JSON.stringify(errorBody(error, status)))
  }
}

/** CONNECT has no place in a reverse proxy: a 405 instead of Node's silent close. */
export function connectHandler(options: ClientErrorOptions): (req: IncomingMessage, socket: Duplex) => void {
  const allow = (options.methods ?? []).join(', ')
  return (req, socket) => {
    const error = new MethodNotAllowedError('CONNECT', allow)
    options.tracker?.recordRaw('CONNECT', req.headers, 405, outcomeOf(error, 405))
    writeRaw(socket, 405, JSON.stringify(errorBody(error, 405)), allow === '' ? '' : `Allow: ${allow}\r\n`)
  }
}

/** The bytes the parser refused (Node puts them on its parse errors). */
const packetOf = (err: ParseError): Buffer | undefined => (Buffer.isBuffer(err.rawPacket) ? err.rawPacket : undefined)

/** An `Expect` other than 100-continue: Node would answer 417 itself, in its own shape. */
export function expectationHandler(options: ClientErrorOptions): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const error = new ExpectationFailedError()
    const body = JSON.stringify(errorBody(error, 417))
    options.tracker?.recordRaw(req.method ?? '-', req.headers, 417, outcomeOf(error, 417))
    res.writeHead(417, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    })
    res.end(body)
  }
}

function answerFor(err: ParseError, maxHeaderBytes: number): FastifyError {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new RequestTimeoutError()
    case 'HPE_HEADER_OVERFLOW':
      return requestLineTooLong(packetOf(err), maxHeaderBytes)
        ? new UrlTooLongError(maxHeaderBytes)
        : new HeadersTooLargeError(maxHeaderBytes)
    case 'HPE_INVALID_URL':
    case 'HPE_INVALID_CONSTANT': {
      // A byte the parser refuses in the target (HPE_INVALID_URL), or a raw space, which ends the
      // target early so the rest is no `HTTP/x.y` (HPE_INVALID_CONSTANT): a bad path, said as such.
      const target = requestTargetOf(packetOf(err))
      const problem = target === undefined ? undefined : rawTargetProblem(target)
      if (problem !== undefined) return badPathError(problem)
      return new BadHttpError(err.code)
    }
    default:
      return new BadHttpError(err.code ?? 'parse error')
  }
}

// A request line as RFC 9112 §3 has it, but with anything between the method and the version.
const REQUEST_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ (.*) HTTP\/\d\.\d\r?$/

/** The request target of the refused bytes' first line (everything between the method and ` HTTP/x.y`), if it is one. */
function requestTargetOf(packet: Buffer | undefined): string | undefined {
  if (packet === undefined) return undefined
  const eol = packet.indexOf(0x0a)
  const line = packet.subarray(0, eol < 0 ? Math.min(packet.length, 65_536) : eol).toString('latin1')
  return REQUEST_LINE.exec(line)?.[1]
}

/** Whether the refused bytes are a request line that alone fills the limit (Node counts it and the headers together). */
function requestLineTooLong(packet: Buffer | undefined, maxHeaderBytes: number): boolean {
  if (packet === undefined) return false
  const start = packet.subarray(0, 32).toString('latin1')
  if (!/^[A-Z]{3,16} \S/.test(start)) return false
  const eol = packet.indexOf(0x0a)
  return eol < 0 || eol >= maxHeaderBytes
}

/** The method and whatever headers can be read from the refused bytes, to label the record (never trusted for more). */
function headOf(packet: Buffer | undefined): { method: string; headers: IncomingHttpHeaders } {
  const headers: IncomingHttpHeaders = {}
  if (packet === undefined) return { method: '-', headers }
  const text = packet.subarray(0, 65_536).toString('latin1')
  const method = /^([A-Z]{1,16}) /.exec(text)?.[1] ?? '-'
  const auth = /\r\nauthorization:[ \t]*([^\r\n]{1,1024})\r\n/i.exec(text)?.[1]
  if (auth !== undefined) headers.authorization = auth.trim()
  return { method, headers }
}

function writeRaw(socket: Duplex, status: number, body: string, extraHeaders = ''): void {
  // A socket handed over by Node (CONNECT) has no error listener left: a reset must not crash the process.
  if (socket.listenerCount('error') === 0) socket.on('error', () => socket.destroy())
  const reason = REASONS[status] ?? 'Bad Request'
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `${extraHeaders}Connection: close\r\n\r\n${body}`,
  )
  const linger = setTimeout(() => socket.destroy(), LINGER_MS).unref()
  socket.once('close', () => clearTimeout(linger))
}

const REASONS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  405: 'Method Not Allowed',
  417: 'Expectation Failed',
  408: 'Request Timeout',
  414: 'URI Too Long',
  431: 'Request Header Fields Too Large',
}
