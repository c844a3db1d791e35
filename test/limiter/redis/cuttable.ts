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
  /**
   * Holds back what Redis sends on the replica's command connection (the one that never sent
   * SUBSCRIBE) until `flow()`: its script replies wait, its pub/sub messages do not.
   */
  holdReplies(): void
  flow(): void
  close(): Promise<void>
}

export async function cuttable(target: { host: string; port: number }): Promise<Cuttable> {
  const sockets = new Set<Socket>()
  const relays: { upstream: Socket; client: Socket; subscriber: boolean; held: Buffer[] }[] = []
  let holding = false
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
    const relay = { upstream, client, subscriber: false, held: [] as Buffer[] }
    relays.push(relay)
    client.on('data', (chunk: Buffer) => {
      if (/subscribe/i.test(chunk.toString('latin1'))) relay.subscriber = true
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (holding && !relay.subscriber) relay.held.push(chunk)
      else client.write(chunk)
    })
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
    holdReplies() {
      holding = true
    },
    flow() {
      holding = false
      for (const relay of relays) for (const chunk of relay.held.splice(0)) relay.client.write(chunk)
    },
    close() {
      for (const s of sockets) s.destroy()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}
