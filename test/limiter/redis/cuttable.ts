import { createConnection, createServer, type Server, type Socket } from 'node:net'

/**
 * A TCP relay in front of a redis-server whose line the test can cut and restore, while the server
 * itself keeps running and the test can still reach it directly: an outage seen by the replica only.
 */
export interface Cuttable {
  readonly url: string
  /** closes every relayed connection and refuses new ones */
  cut(): void
  /** accepts connections again */
  restore(): void
  close(): Promise<void>
}

export async function cuttable(target: { host: string; port: number }): Promise<Cuttable> {
  const sockets = new Set<Socket>()
  let open = true
  const server: Server = createServer((client) => {
    if (!open) return void client.destroy()
    const upstream = createConnection(target.port, target.host)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('error', () => {})
      s.on('close', () => {
        sockets.delete(s)
        client.destroy()
        upstream.destroy()
      })
    }
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `redis://127.0.0.1:${port}`,
    cut() {
      open = false
      for (const s of sockets) s.destroy()
    },
    restore() {
      open = true
    },
    close() {
      for (const s of sockets) s.destroy()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}
