import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { onTestFinished } from 'vitest'
import { send, until, type Answer, type SendOptions } from '../support/http.js'
import type { RunningProxy } from '../support/proxy.js'
import { reuseStatus } from './support.js'

/** What the stand-in upstream got, as its answers echo it. */
export interface Echo {
  /** which call of the upstream this answer is (1, 2, …): two answers of one call have the same */
  readonly call: number
  readonly method: string
  readonly url: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

export interface EchoUpstream {
  /** the API root for the proxy's `upstream` setting (`…/v2`) */
  readonly apiUrl: string
  /** every request it got, in order */
  readonly seen: Echo[]
  /** requests it holds unanswered now */
  readonly held: number
  /** holds every request from now on until `release` */
  hold(): void
  /** answers every held request, and answers later ones at once */
  release(): void
}

/**
 * A stand-in upstream that answers every request with a JSON echo of what it got (method, target,
 * headers, body), and answers the way an HTTP origin may: an ETag (`"v1"`) and 304 to a matching
 * `If-None-Match`, 206 and a slice of the echo to `Range: bytes=a-b`, a `Vary` header when the query
 * asks for one (`?vary=…`), a `Set-Cookie` when it asks for one (`?cookie=1`). It can hold requests
 * until the test releases them, so a test sees which requests share a call without racing a timer.
 * Closed when the test finishes.
 */
export async function echoUpstream(): Promise<EchoUpstream> {
  const seen: Echo[] = []
  let holding = false
  const held: (() => void)[] = []

  const answer = (echo: Echo, res: ServerResponse): void => {
    const query = new URL(echo.url, 'http://upstream').searchParams
    const head: Record<string, string> = { 'content-type': 'application/json', etag: '"v1"' }
    if (query.has('vary')) head.vary = query.get('vary')!
    if (query.get('cookie') === '1') head['set-cookie'] = `session=${echo.call}; Path=/`
    if (String(echo.headers['if-none-match'] ?? '').includes('"v1"')) {
      res.writeHead(304, head).end()
      return
    }
    const body = Buffer.from(JSON.stringify(echo))
    const range = /^bytes=(\d+)-(\d+)$/.exec(String(echo.headers.range ?? ''))
    if (range !== null) {
      const from = Number(range[1])
      const to = Math.min(Number(range[2]), body.length - 1)
      res
        .writeHead(206, { ...head, 'content-range': `bytes ${from}-${to}/${body.length}` })
        .end(body.subarray(from, to + 1))
      return
    }
    res.writeHead(200, head).end(body)
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const echo: Echo = {
        call: seen.length + 1,
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      }
      seen.push(echo)
      if (holding) held.push(() => answer(echo, res))
      else answer(echo, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  const { port } = server.address() as AddressInfo
  return {
    apiUrl: `http://127.0.0.1:${port}/v2`,
    seen,
    get held() {
      return held.length
    },
    hold() {
      holding = true
    },
    release() {
      holding = false
      for (const go of held.splice(0)) go()
    },
  }
}

/** One request for `sendWhileHeld`: a path and its options. */
export interface HeldRequest {
  readonly path: string
  readonly options?: SendOptions
}

/**
 * Sends `first` and waits until the upstream holds it; then sends the others and waits until each
 * either follows a call (the proxy's /status counts it) or reaches the upstream itself; then lets
 * the upstream answer. Answers in the order sent. Nothing here races a timer: every step waits for
 * what the proxy or the upstream says happened.
 */
export async function sendWhileHeld(
  proxy: RunningProxy,
  upstream: EchoUpstream,
  first: HeldRequest,
  ...others: HeldRequest[]
): Promise<Answer[]> {
  upstream.hold()
  const before = upstream.held
  const answers = [send(proxy.url, first.path, first.options)]
  await until(() => upstream.held === before + 1, 'the first request reaches the upstream')
  answers.push(...others.map((r) => send(proxy.url, r.path, r.options)))
  await until(
    async () => upstream.held + (await reuseStatus(proxy)).coalescing.followers === before + 1 + others.length,
    'each request follows a call or reaches the upstream',
  )
  upstream.release()
  return Promise.all(answers)
}
