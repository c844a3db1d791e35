import type { Server } from 'node:net'
import { getHeapStatistics } from 'node:v8'
import { Counter, type Registry } from 'prom-client'

/**
 * Gives the heap back to the system once a burst of client connections has gone.
 *
 * Why sluice does this itself (README "Memory after a burst"; the measurements are in
 * docs/benchmarks.md, "Back to idle after the flood"): V8 collects garbage when JavaScript
 * allocates, and gives its free pages back only from its memory reducer, which it arms after a full
 * collection and which runs while the allocation rate looks low. A proxy that held thousands of
 * queued requests and is quiet afterwards allocates almost nothing: when the reducer has already run
 * during the burst (the queued requests waiting quietly look idle too), nothing re-arms it, and the
 * drained requests stay in the heap as garbage with their pages committed, for as long as the
 * process stays quiet.
 *
 * So: when the number of open client connections has reached `burstConnections` and then fallen
 * below a tenth of that peak, and stayed there for `quietMs`, sluice asks V8 once for the collection
 * it makes under memory pressure (the inspector protocol's `HeapProfiler.collectGarbage`, in
 * process: no port is opened). It compacts the old space, shrinks the young generation and returns
 * the free pages; it pauses the event loop for that collection (tens of ms at most on the heap of
 * 5,000 queued requests), once per burst.
 */
export interface MemoryAfterBurstOptions {
  /** open client connections that make a burst; 0: never collect */
  readonly burstConnections: number
  /** how long the burst must have been gone (and how often it is looked at) */
  readonly quietMs: number
}

/** What one collection did, for the log line. */
export interface BurstCollection {
  readonly peakConnections: number
  readonly heapCommittedBefore: number
  readonly heapCommittedAfter: number
  readonly ms: number
}

type Collect = () => Promise<void>

export class MemoryAfterBurst {
  #open = 0
  #peak = 0
  /** the tick that first found the burst gone; the next one collects */
  #goneSeen = false
  #collecting = false
  #timer: NodeJS.Timeout | undefined
  readonly #collections: Counter
  #collect: Collect | undefined

  constructor(
    server: Server,
    private readonly options: MemoryAfterBurstOptions,
    registry: Registry,
    private readonly log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void },
  ) {
    this.#collections = new Counter({
      name: 'sluice_heap_collections_total',
      help: 'Collections sluice asked V8 for after a burst of client connections had gone, to give the heap back (README "Memory after a burst")',
      registers: [registry],
    })
    if (options.burstConnections === 0) return
    // Counted from the connections themselves, so a burst shorter than one look is seen too.
    server.on('connection', (socket) => {
      if (++this.#open > this.#peak) this.#peak = this.#open
      socket.once('close', () => this.#open--)
    })
    this.#timer = setInterval(() => this.#look(), options.quietMs)
    this.#timer.unref() // never what keeps the process up
  }

  /** stops looking (on close) */
  stop(): void {
    clearInterval(this.#timer)
  }

  #look(): void {
    const gone = this.#peak >= this.options.burstConnections && this.#open * 10 <= this.#peak
    if (!gone || this.#collecting) {
      this.#goneSeen = false
      return
    }
    if (!this.#goneSeen) {
      this.#goneSeen = true
      return
    }
    this.#goneSeen = false
    const peakConnections = this.#peak
    this.#peak = this.#open
    this.#collecting = true
    void this.#collectOnce(peakConnections).finally(() => (this.#collecting = false))
  }

  async #collectOnce(peakConnections: number): Promise<void> {
    const started = performance.now()
    const heapCommittedBefore = getHeapStatistics().total_heap_size
    try {
      this.#collect ??= await memoryPressureCollection()
      await this.#collect()
    } catch (err) {
      // Without an inspector (a Node built without one) the memory comes back when V8 gets to it.
      this.log.warn({ err }, 'could not ask V8 to give the heap back after a burst of connections')
      return
    }
    this.#collections.inc()
    const done: BurstCollection = {
      peakConnections,
      heapCommittedBefore,
      heapCommittedAfter: getHeapStatistics().total_heap_size,
      ms: Math.round(performance.now() - started),
    }
    this.log.info(done, 'heap given back after a burst of connections')
  }
}

/**
 * V8's collection under memory pressure (`Isolate::LowMemoryNotification`, which the inspector's
 * `HeapProfiler.collectGarbage` runs as a task of its own), through an in-process inspector session.
 */
async function memoryPressureCollection(): Promise<Collect> {
  const { Session } = await import('node:inspector')
  return () =>
    new Promise<void>((resolve, reject) => {
      const session = new Session()
      session.connect()
      session.post('HeapProfiler.collectGarbage', (err) => {
        // Disconnecting inside the reply would dispose the agent while V8 still holds its lock: wait a turn.
        setImmediate(() => session.disconnect())
        if (err) reject(err)
        else resolve()
      })
    })
}
