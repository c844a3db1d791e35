import { spawn } from 'node:child_process'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { connect, createServer as createNetServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { Writable } from 'node:stream'
import { buildApp, type App } from '../../src/app.js'
import { DEFAULT_CATALOG_FILE, normalisePath, readCatalogFile } from '../../src/catalog/index.js'
import { loadSettings } from '../../src/config/load.js'
import { PROXY_METHODS } from '../../src/proxy/plugin.js'
import { generateInput, Rng, type FuzzInput } from './inputs.js'

/**
 * A bounded raw-socket fuzz of sluice's HTTP front (README "Development"): generated inputs go to a
 * real proxy on loopback in front of an API stand-in that checks everything reaching it. Fails on a
 * crash, a hang (no answer and no close within the bound), a 5xx from sluice itself, an own answer
 * not in the `[{code, message}]` shape, or anything malformed reaching the API.
 */

export interface FuzzOptions {
  readonly inputs: number
  readonly maxMs: number
  readonly seed: number
  readonly concurrency: number
  /**
   * `child`: the proxy is `node dist/main.js` in its own process (a crash is its exit; both cores
   * work); `in-process`: buildApp in this process (a crash is an uncaught exception here)
   */
  readonly proxy?: 'child' | 'in-process'
  /** called every few seconds with the counts so far */
  readonly progress?: (counts: FuzzCounts) => void
}

export interface FuzzCounts {
  inputs: number
  /** by status class of the first answer: 2xx, 4xx, …; `none` = the connection closed without an answer */
  readonly answers: Record<string, number>
  /** own answers by status and code */
  readonly ownStatuses: Record<string, number>
  /** requests that reached the API stand-in */
  reachedApi: number
  hangs: number
  ownServerErrors: number
  badShapes: number
  malformedAtApi: number
  crashes: number
  elapsedMs: number
  readonly examples: string[]
}

const CLIENT = {
  headersTimeoutMs: 1_000,
  requestTimeoutMs: 2_000,
  bodyGraceMs: 1_000,
  keepAliveTimeoutMs: 1_000,
}
// An answer (or a close) must come within the request timeout and this much more.
const SLACK_MS = 5_000
const CONTROL_HEADERS = ['x-sluice-instance', 'x-sluice-app', 'x-sluice-max-wait']
// (undici sets its own `connection: keep-alive`)
const HOP_BY_HOP = ['keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'proxy-authorization']
const VERSION = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/
// RFC 3986 §3.3 and §3.4, written out here rather than taken from sluice: what a path and a query may hold.
const RFC_PATH = /^(\/([A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})*)*$/
const RFC_QUERY = /^([A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*$/

/** What the API stand-in refuses to have received: a reason, or undefined when the request is clean. */
function malformed(req: IncomingMessage): string | undefined {
  const method = req.method ?? ''
  if (!PROXY_METHODS.includes(method)) return `method ${JSON.stringify(method)}`
  const url = req.url ?? ''
  const q = url.indexOf('?')
  const path = q < 0 ? url : url.slice(0, q)
  if (!path.startsWith('/v2/') && path !== '/v2') return `path not under /v2: ${JSON.stringify(path.slice(0, 80))}`
  if (!RFC_PATH.test(path)) return `a path RFC 3986 does not allow: ${JSON.stringify(path.slice(0, 80))}`
  if (q >= 0 && !RFC_QUERY.test(url.slice(q + 1)))
    return `a query RFC 3986 does not allow: ${JSON.stringify(url.slice(q, q + 80))}`
  const rest = path.slice(3)
  const normal = normalisePath(rest === '' ? '/' : rest)
  if (!normal.ok) return `a path sluice should have refused: ${JSON.stringify(path.slice(0, 80))}`
  if ('/' + normal.segments.join('/') !== (rest === '' ? '/' : rest))
    return `a path not in canonical form: ${JSON.stringify(path.slice(0, 80))}`
  const h = req.headers
  if (h['transfer-encoding'] !== undefined && h['content-length'] !== undefined)
    return 'both Transfer-Encoding and Content-Length'
  for (const name of [...HOP_BY_HOP, ...CONTROL_HEADERS]) if (h[name] !== undefined) return `header ${name} passed on`
  if (h.connection !== undefined && h.connection !== 'keep-alive' && h.connection !== 'close')
    return `connection: ${h.connection} passed on`
  const version = h['neon-api-version']
  if (version !== undefined && (typeof version !== 'string' || !VERSION.test(version)))
    return `version header ${JSON.stringify(version)}`
  for (const [name, value] of Object.entries(h)) {
    for (const v of Array.isArray(value) ? value : [value ?? ''])
      if (/[\r\n\0]/.test(v)) return `header ${name} with a line break or NUL`
  }
  return undefined
}

async function startStandIn(counts: FuzzCounts): Promise<{ server: Server; url: string }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    counts.reachedApi++
    const problem = malformed(req)
    if (problem !== undefined) {
      counts.malformedAtApi++
      if (counts.examples.length < 20) counts.examples.push(`reached the API: ${problem}`)
    }
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2', 'x-upstream': '1' })
      res.end('{}')
    })
  })
  // Bytes the API's own parser refuses are malformed HTTP that got through sluice.
  server.on('clientError', (err: Error & { code?: string }, socket) => {
    if (err.code !== 'ECONNRESET') {
      counts.malformedAtApi++
      if (counts.examples.length < 20)
        counts.examples.push(`the API could not parse what sluice sent: ${err.code ?? err.message}`)
    }
    socket.destroy()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return { server, url: `http://127.0.0.1:${port}/v2` }
}

interface Exchange {
  status: number
  headers: Record<string, string>
  body: string
  closed: boolean
  hung: boolean
}

/** Sends one input on its own connection; reads the first answer (or the close). */
function exchange(port: number, input: FuzzInput, boundMs: number): Promise<Exchange> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    let settled = false
    const socket = connect(port, '127.0.0.1', () => socket.write(input.bytes))
    const done = (closed: boolean, hung = false): void => {
      if (settled) return
      settled = true
      clearTimeout(bound)
      // a reset leaves no TIME_WAIT behind: a million connections would otherwise run out of ports
      if (!socket.destroyed) socket.resetAndDestroy()
      resolve({ ...parse(Buffer.concat(chunks, size).toString('latin1')), closed, hung })
    }
    const bound = setTimeout(() => done(false, true), boundMs)
    socket.on('data', (d: Buffer) => {
      chunks.push(d)
      size += d.length
      if (complete(Buffer.concat(chunks, size).toString('latin1'), input.head)) done(false)
    })
    socket.on('end', () => done(true))
    socket.on('close', () => done(true))
    socket.on('error', () => done(true))
  })
}

function parse(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const m = /^HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n/.exec(raw)
  const end = raw.indexOf('\r\n\r\n')
  const headers: Record<string, string> = {}
  if (m === null || end < 0) return { status: 0, headers, body: '' }
  for (const line of raw.slice(m[0].length, end).split('\r\n')) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  return { status: Number(m[1]), headers, body: raw.slice(end + 4) }
}

function complete(raw: string, head: boolean): boolean {
  const end = raw.indexOf('\r\n\r\n')
  if (end < 0) return false
  if (head) return true
  const length = /\r\ncontent-length: *(\d+)/i.exec(raw.slice(0, end + 2))
  return length !== null && raw.length - end - 4 >= Number(length[1])
}

function check(counts: FuzzCounts, input: FuzzInput, answer: Exchange): void {
  const note = (what: string): void => {
    if (counts.examples.length < 20)
      counts.examples.push(`${what}; input ${JSON.stringify(input.bytes.subarray(0, 160).toString('latin1'))}`)
  }
  if (answer.hung) {
    counts.hangs++
    note('no answer and no close within the bound')
  }
  const cls = answer.status === 0 ? 'none' : `${Math.floor(answer.status / 100)}xx`
  counts.answers[cls] = (counts.answers[cls] ?? 0) + 1
  if (answer.status === 0 || answer.headers['x-upstream'] === '1') return
  const code = /"code":"(SLUICE_[A-Z0-9_]+)"/.exec(answer.body)?.[1] ?? '-'
  const key = `${answer.status} ${code}`
  counts.ownStatuses[key] = (counts.ownStatuses[key] ?? 0) + 1
  if (answer.status >= 500) {
    counts.ownServerErrors++
    note(`sluice answered ${answer.status}: ${answer.body.slice(0, 200)}`)
  }
  if (answer.status >= 400 && !input.head) {
    let shaped = false
    try {
      const body = JSON.parse(answer.body) as unknown
      const first = (Array.isArray(body) && body.length === 1 ? body[0] : undefined) as
        { code?: unknown; message?: unknown } | undefined
      shaped =
        typeof first?.code === 'string' && /^SLUICE_[A-Z0-9_]+$/.test(first.code) && typeof first.message === 'string'
    } catch {
      shaped = false
    }
    if (!shaped) {
      counts.badShapes++
      note(`an own ${answer.status} not in the error shape: ${answer.body.slice(0, 200)}`)
    }
  }
}

/** Counts before the first input (one worker's start, or the sum of several). */
export function noCounts(elapsedMs = 0): FuzzCounts {
  return {
    inputs: 0,
    answers: {},
    ownStatuses: {},
    reachedApi: 0,
    hangs: 0,
    ownServerErrors: 0,
    badShapes: 0,
    malformedAtApi: 0,
    crashes: 0,
    elapsedMs,
    examples: [],
  }
}

/** Runs the fuzz; resolves with the counts (a failure is any of hangs, ownServerErrors, badShapes, malformedAtApi, crashes). */
export async function fuzzHttpFront(options: FuzzOptions): Promise<FuzzCounts> {
  const counts = noCounts()
  const onCrash = (err: unknown): void => {
    counts.crashes++
    if (counts.examples.length < 20)
      counts.examples.push(`uncaught: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`)
  }
  process.on('uncaughtException', onCrash)
  process.on('unhandledRejection', onCrash)
  const standIn = await startStandIn(counts)
  let app: App | undefined
  let child: ChildProxy | undefined
  try {
    let port: number
    if (options.proxy === 'child') {
      child = await spawnChildProxy(standIn.url, counts)
      port = child.port
    } else {
      const settings = loadSettings(
        {},
        {
          host: '127.0.0.1',
          adminHost: '127.0.0.1',
          port: 0,
          adminPort: 0,
          upstream: standIn.url,
          client: CLIENT,
          queue: { maxWaitMs: 60_000 },
          metrics: { defaultMetrics: false },
        },
      )
      // the access log goes nowhere: the fuzz checks answers, the tests check log lines
      app = await buildApp(settings, { logStream: new Writable({ write: (_c, _e, cb) => cb() }) })
      const { proxyUrl } = await app.listen()
      port = Number(new URL(proxyUrl).port)
    }
    const templates = readCatalogFile(DEFAULT_CATALOG_FILE).map((e) => e.path)
    const rng = new Rng(options.seed)
    const started = Date.now()
    const stopAt = started + options.maxMs
    const bound = CLIENT.requestTimeoutMs + SLACK_MS
    let lastProgress = started
    const worker = async (): Promise<void> => {
      while (counts.inputs < options.inputs && Date.now() < stopAt) {
        counts.inputs++
        const input = generateInput(rng, templates)
        check(counts, input, await exchange(port, input, bound))
        if (options.progress !== undefined && Date.now() - lastProgress > 10_000) {
          lastProgress = Date.now()
          counts.elapsedMs = lastProgress - started
          options.progress(counts)
        }
      }
    }
    await Promise.all(Array.from({ length: options.concurrency }, worker))
    counts.elapsedMs = Date.now() - started
  } finally {
    await app?.close()
    await child?.stop()
    await new Promise((resolve) => standIn.server.close(resolve))
    process.off('uncaughtException', onCrash)
    process.off('unhandledRejection', onCrash)
  }
  return counts
}

/** Whether the counts show any failure. */
export const fuzzFailed = (c: FuzzCounts): boolean =>
  c.hangs + c.ownServerErrors + c.badShapes + c.malformedAtApi + c.crashes > 0

interface ChildProxy {
  readonly port: number
  stop(): Promise<void>
}

const MAIN_JS = fileURLToPath(new URL('../../dist/main.js', import.meta.url))

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const server = createNetServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

/** `node dist/main.js` on free ports with the fuzz's settings; its exit before `stop` counts as a crash. */
async function spawnChildProxy(upstream: string, counts: FuzzCounts): Promise<ChildProxy> {
  const [port, adminPort] = [await freePort(), await freePort()]
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    SLUICE_HOST: '127.0.0.1',
    SLUICE_ADMIN_HOST: '127.0.0.1',
    SLUICE_PORT: String(port),
    SLUICE_ADMIN_PORT: String(adminPort),
    SLUICE_UPSTREAM: upstream,
    SLUICE_QUEUE_MAX_WAIT_MS: '60000',
    SLUICE_METRICS_DEFAULT_METRICS: 'false',
    SLUICE_CLIENT_HEADERS_TIMEOUT_MS: String(CLIENT.headersTimeoutMs),
    SLUICE_CLIENT_REQUEST_TIMEOUT_MS: String(CLIENT.requestTimeoutMs),
    SLUICE_CLIENT_BODY_GRACE_MS: String(CLIENT.bodyGraceMs),
    SLUICE_CLIENT_KEEP_ALIVE_TIMEOUT_MS: String(CLIENT.keepAliveTimeoutMs),
  }
  const proc = spawn(process.execPath, [MAIN_JS], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  proc.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)))
  let stopping = false
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  void exited.then((code) => {
    if (stopping) return
    counts.crashes++
    counts.examples.push(`the proxy process exited with ${code}: ${stderr}`)
  })
  const deadline = Date.now() + 20_000
  for (;;) {
    const up = await fetch(`http://127.0.0.1:${adminPort}/healthz`).then(
      (r) => r.ok,
      () => false,
    )
    if (up) break
    if (Date.now() > deadline) throw new Error(`the proxy did not start: ${stderr}`)
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    port,
    async stop() {
      stopping = true
      proc.kill('SIGTERM')
      const code = await exited
      if (code !== 0) {
        counts.crashes++
        counts.examples.push(`the proxy process exited with ${code} on SIGTERM: ${stderr}`)
      }
    },
  }
}
