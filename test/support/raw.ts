import { connect, type Socket } from 'node:net'

/** What came back on a raw connection: the first answer's status, headers and body, and everything read. */
export interface RawAnswer {
  /** 0 when nothing that looks like an HTTP answer came back */
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  readonly raw: string
  /** true when the server closed the connection (rather than the bound running out) */
  readonly closed: boolean
}

export function parseRaw(raw: string, closed: boolean): RawAnswer {
  const m = /^HTTP\/1\.1 (\d{3})[^\r\n]*\r\n/.exec(raw)
  const end = raw.indexOf('\r\n\r\n')
  const headers: Record<string, string> = {}
  if (m === null || end < 0) return { status: 0, headers, body: '', raw, closed }
  for (const line of raw.slice(m[0].length, end).split('\r\n')) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const length = Number(headers['content-length'] ?? NaN)
  const rest = raw.slice(end + 4)
  return { status: Number(m[1]), headers, body: Number.isFinite(length) ? rest.slice(0, length) : rest, raw, closed }
}

/**
 * Opens a connection to `baseUrl`'s host and port, lets `talk` write to it (all at once, or bit by
 * bit), and collects what the server sends until it closes the connection or `boundMs` passes (which
 * only bounds how long a broken test hangs).
 */
export function rawExchange(
  baseUrl: string,
  talk: string | Buffer | ((socket: Socket) => void),
  boundMs = 20_000,
): Promise<RawAnswer> {
  const url = new URL(baseUrl)
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    const socket = connect(Number(url.port), url.hostname, () => {
      if (typeof talk === 'function') talk(socket)
      else socket.write(talk)
    })
    let done = false
    const finish = (closed: boolean): void => {
      if (done) return
      done = true
      clearTimeout(bound)
      socket.destroy()
      resolve(parseRaw(Buffer.concat(chunks).toString('latin1'), closed))
    }
    const bound = setTimeout(() => finish(false), boundMs)
    socket.on('data', (d: Buffer) => chunks.push(d))
    socket.on('end', () => finish(true))
    socket.on('close', () => finish(true))
    socket.on('error', () => finish(true))
  })
}
