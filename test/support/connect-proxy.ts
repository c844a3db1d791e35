import { createServer, type IncomingMessage, type Server } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { createServer as createHttpsServer } from 'node:https'

/** A forward proxy that only tunnels (HTTP CONNECT), as corporate egress proxies do for https. */
export interface ConnectProxy {
  /** http://127.0.0.1:PORT */
  readonly url: string
  readonly port: number
  /** `host:port` of every tunnel opened, in order */
  readonly tunnels: string[]
  /** the Proxy-Authorization header of every CONNECT (undefined when none was sent) */
  readonly authorizations: (string | undefined)[]
  close(): Promise<void>
}

/**
 * Starts the proxy on a free loopback port. With `requireAuthorization`, a CONNECT without exactly
 * that Proxy-Authorization value is answered 407, as a proxy asking for credentials does.
 */
export async function startConnectProxy(o: { requireAuthorization?: string } = {}): Promise<ConnectProxy> {
  const tunnels: string[] = []
  const authorizations: (string | undefined)[] = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((_req, res) => res.writeHead(405).end('CONNECT only'))
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    sockets.add(client)
    client.on('close', () => sockets.delete(client))
    client.on('error', () => undefined)
    const auth = req.headers['proxy-authorization']
    authorizations.push(auth)
    if (o.requireAuthorization !== undefined && auth !== o.requireAuthorization) {
      client.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n',
      )
      return
    }
    const target = req.url ?? ''
    tunnels.push(target)
    const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))]
    const upstream = connect(port, host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length > 0) upstream.write(head)
      upstream.pipe(client)
      client.pipe(upstream)
    })
    sockets.add(upstream)
    upstream.on('close', () => sockets.delete(upstream))
    upstream.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n'))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    tunnels,
    authorizations,
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** What the https upstream saw of one request. */
export interface SeenRequest {
  readonly method: string
  readonly url: string
  readonly host: string | undefined
  readonly authorization: string | undefined
  readonly proxyAuthorization: string | undefined
}

/** A tiny API over TLS (a certificate from test/support/tls.ts): answers every request 200 with what it saw. */
export async function startHttpsUpstream(tls: {
  key: Buffer
  cert: Buffer
}): Promise<{ url: string; port: number; seen: SeenRequest[]; close(): Promise<void> }> {
  const seen: SeenRequest[] = []
  const server = createHttpsServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const request: SeenRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      host: req.headers.host,
      authorization: req.headers.authorization,
      proxyAuthorization: req.headers['proxy-authorization'],
    }
    seen.push(request)
    req.resume()
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(request)))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    seen,
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
