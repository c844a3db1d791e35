import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'

export interface Answer {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly text: string
  json<T = unknown>(): T
}

export interface SendOptions {
  readonly method?: string
  readonly headers?: Record<string, string>
  readonly body?: string | Buffer
  /** aborts the request (the client hangs up) */
  readonly signal?: AbortSignal
  /** the client's own address, e.g. `127.0.0.2`: another client on this machine's loopback */
  readonly localAddress?: string
}

/**
 * One request with the path sent byte for byte as given (fetch would normalise `..`, `%2e` and
 * doubled slashes away before they ever reach the proxy).
 */
export function send(baseUrl: string, path: string, o: SendOptions = {}): Promise<Answer> {
  const url = new URL(baseUrl)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: o.method ?? 'GET',
        path,
        headers: o.headers,
        signal: o.signal,
        agent: false,
        ...(o.localAddress === undefined ? {} : { localAddress: o.localAddress }),
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('error', reject)
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: <T>() => JSON.parse(text) as T })
        })
      },
    )
    req.on('error', reject)
    req.end(o.body)
  })
}

/** Polls `check` until it returns true (bounds how long a broken test hangs; not a timing assertion). */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}
