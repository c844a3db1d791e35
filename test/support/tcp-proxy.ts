import { createServer, connect, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'

/**
 * A tiny TCP proxy on loopback in front of a server (Redis in the fault tests): every byte goes
 * through it, so a test can slow the network down, hold it (a partition: nothing lost, TCP would
 * deliver it after the partition heals) or cut every connection. Bytes are never dropped
 * silently: that would desynchronise the Redis protocol, which no real network does.
 */
export interface TcpProxy {
  readonly host: string
  readonly port: number
  /** `redis://host:port` through the proxy */
  readonly url: string
  /** from now on, every chunk in either direction is passed on `ms` later (in order); 0 = at once */
  delay(ms: number): void
  /** holds every byte in either direction until `release` (the connections stay open): a partition */
  hold(): void
  /** passes on what `hold` kept, in order, and lets traffic flow again */
  release(): void
  /** resets every open connection (new ones are accepted) */
  cut(): void
  /** connections open now */
  connections(): number
  close(): Promise<void>
}

const HOST = '127.0.0.1'

/** One direction of one connection: chunks in order, each due at a time, or held. */
class Pipe {
  readonly #queue: { due: number; chunk: Buffer }[] = []
  #timer: NodeJS.Timeout | undefined

  constructor(
    private readonly to: Socket,
    private readonly state: { delayMs: number; held: boolean },
  ) {}

  push(chunk: Buffer): void {
    this.#queue.push({ due: Date.now() + this.state.delayMs, chunk })
    this.flush()
  }

  flush(): void {
    if (this.#timer !== undefined) return
    while (this.#queue.length > 0 && !this.state.held) {
      const wait = this.#queue[0]!.due - Date.now()
      if (wait > 0) {
        this.#timer = setTimeout(() => {
          this.#timer = undefined
          this.flush()
        }, wait)
        return
      }
      if (!this.to.destroyed) this.to.write(this.#queue.shift()!.chunk)
      else this.#queue.length = 0
    }
  }

  clear(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#queue.length = 0
  }
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const state = { delayMs: 0, held: false }
  const open = new Set<{ client: Socket; server: Socket; pipes: Pipe[] }>()
  const proxy = createServer((client) => {
    const server = connect(target.port, target.host)
    const up = new Pipe(server, state)
    const down = new Pipe(client, state)
    const link = { client, server, pipes: [up, down] }
    open.add(link)
    client.setNoDelay(true)
    server.setNoDelay(true)
    client.on('data', (chunk: Buffer) => up.push(chunk))
    server.on('data', (chunk: Buffer) => down.push(chunk))
    const end = (): void => {
      if (!open.delete(link)) return
      up.clear()
      down.clear()
      client.destroy()
      server.destroy()
    }
    for (const socket of [client, server]) {
      socket.on('error', end)
      socket.on('close', end)
    }
  })
  await new Promise<void>((resolve, reject) => {
    proxy.once('error', reject)
    proxy.listen(0, HOST, () => resolve())
  })
  const { port } = proxy.address() as AddressInfo
  const cutAll = (): void => {
    for (const link of [...open]) {
      for (const pipe of link.pipes) pipe.clear()
      link.client.resetAndDestroy()
      link.server.destroy()
      open.delete(link)
    }
  }
  return {
    host: HOST,
    port,
    url: `redis://${HOST}:${port}`,
    delay(ms) {
      state.delayMs = ms
    },
    hold() {
      state.held = true
    },
    release() {
      state.held = false
      for (const link of open) for (const pipe of link.pipes) pipe.flush()
    },
    cut: cutAll,
    connections: () => open.size,
    close() {
      cutAll()
      return new Promise((resolve) => proxy.close(() => resolve()))
    },
  }
}
