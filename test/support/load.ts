import { send } from './http.js'
import type { ProxyProcess } from './process.js'

// No vitest in here: `npm run soak` drives the same loops outside the test runner.

/** One (instance, endpoint) as clients call it through the proxy and as the sim counts it. */
export interface Route {
  readonly instance: string
  readonly method: string
  /** the path clients send, e.g. `/v2/accounts/search` */
  readonly path: string
  /** the sim's endpoint id, e.g. `POST /accounts/search` */
  readonly endpoint: string
  readonly limit: number
}

export const route = (instance: string, method: string, path: string, endpoint: string, limit: number): Route => ({
  instance,
  method,
  path,
  endpoint,
  limit,
})

export interface Loop {
  /** index into the live replicas array: a restarted replica's clients follow it to its new port */
  readonly replica: number
  readonly route: Route
  /** extra request headers (e.g. `x-sim-delay-ms`) */
  readonly headers?: Record<string, string>
}

/** What the client loops saw. */
export interface LoopFigures {
  /** requests sent */
  readonly sent: number
  /** answers by status */
  readonly statuses: Readonly<Record<number, number>>
  /** requests that ended without an answer on a replica that was killed (its clients lose it with it) */
  readonly lostWithReplica: number
  /** requests that ended without an answer for any other reason (each one a failure) */
  readonly errors: readonly string[]
  /** requests still unanswered when `stop` gave up waiting */
  readonly unanswered: number
}

const basic = (org: string): string => `Basic ${Buffer.from(`${org}:fault-key`).toString('base64')}`

/**
 * Closed-loop clients, each pinned to one replica and one route, sending one request after
 * another until `stop`. A request to a replica that is killed meanwhile (`replicaKilled`) is not
 * answered — that is the replica's clients' loss, counted apart; every other request must be.
 */
export class ClientLoops {
  readonly #replicas: readonly ProxyProcess[]
  readonly #loops: readonly Loop[]
  readonly #killed = new Set<number>()
  readonly #pending = new Set<Promise<void>>()
  readonly #statuses: Record<number, number> = {}
  readonly #errors: string[] = []
  #sent = 0
  #lost = 0
  #running = false
  #loopsDone: Promise<unknown> | undefined

  constructor(replicas: readonly ProxyProcess[], loops: readonly Loop[]) {
    this.#replicas = replicas
    this.#loops = loops
  }

  /** answers received so far (any status) */
  answered(): number {
    return Object.values(this.#statuses).reduce((a, b) => a + b, 0)
  }

  start(): void {
    this.#running = true
    this.#loopsDone = Promise.all(this.#loops.map((loop) => this.#run(loop)))
  }

  /** the process at `pid` is about to be killed: its clients' requests in progress count as lost with it */
  replicaKilled(pid: number): void {
    this.#killed.add(pid)
  }

  async #run(loop: Loop): Promise<void> {
    while (this.#running) {
      const replica = this.#replicas[loop.replica]!
      if (this.#killed.has(replica.pid)) {
        await new Promise((resolve) => setTimeout(resolve, 20)) // until its successor is in its place
        continue
      }
      const { route: r } = loop
      this.#sent++
      const request = send(replica.url, r.path, {
        method: r.method,
        // the sim logs it with each arrival: which replica sent what, when a run is looked into
        headers: {
          authorization: basic(r.instance),
          'x-test-seq': `replica ${loop.replica} pid ${replica.pid}`,
          ...loop.headers,
        },
        body: r.method === 'POST' ? '{}' : undefined,
      }).then(
        (answer) => {
          this.#statuses[answer.status] = (this.#statuses[answer.status] ?? 0) + 1
        },
        async (err: Error) => {
          if (this.#killed.has(replica.pid)) this.#lost++
          else this.#errors.push(`${r.method} ${r.path} via replica ${loop.replica}: ${err.message}`)
          await new Promise((resolve) => setTimeout(resolve, 20)) // a dead port: do not spin
        },
      )
      this.#pending.add(request)
      await request
      this.#pending.delete(request)
    }
  }

  /** Stops the loops and waits (up to `boundMs`, a bound on a broken run, not a timing assertion) for every request in progress. */
  async stop(boundMs = 30_000): Promise<LoopFigures> {
    this.#running = false
    const bound = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), boundMs).unref())
    await Promise.race([this.#loopsDone, bound])
    return {
      sent: this.#sent,
      statuses: { ...this.#statuses },
      lostWithReplica: this.#lost,
      errors: [...this.#errors],
      unanswered: this.#pending.size,
    }
  }
}

/** `count` loops per route, spread over `replicas` replicas in turn. */
export function loopsOver(
  routes: readonly Route[],
  count: number,
  replicas: number,
  headers?: Record<string, string>,
): Loop[] {
  const loops: Loop[] = []
  for (const r of routes)
    for (let i = 0; i < count; i++) loops.push({ replica: loops.length % replicas, route: r, headers })
  return loops
}
