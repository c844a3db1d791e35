import type { Server } from 'node:net'
import { getHeapStatistics } from 'node:v8'
import { Counter, type Registry } from 'prom-client'

/**
 * Gives the heap back once a burst of client connections has gone: a quiet proxy may never re-arm
 * V8's memory reducer (docs/requests.md, "Memory after a burst").
 */
export interface MemoryAfterBurstOptions {
  /** open client connections that make a burst; 0: never collect */
  readonly burstConnections: number
  /** how long the burst must have been gone (and how often it is looked at meanwhile) */
  readonly quietMs: number
}

/** at most one collection in this long: bursts that keep coming are left to V8 between them */
export const MIN_SPACING_MS = 60_000
/** and, after the first, only when V8's committed heap has grown this much since the last one left it */
export const MIN_HEAP_GROWTH_BYTES = 16 * 1024 * 1024
/** a collection that has not answered in this long is given up (a paused debugger would hold it) */
const COLLECTION_TIMEOUT_MS = 10_000

/** When to collect (docs/requests.md, "Memory after a burst"), apart from sockets and timers so the rules are tested on their own. */
export class BurstWatch {
  #open = 0
  #peak = 0
  #goneSeen = false
  #lastCollectionAt = -Infinity
  /** V8's committed heap as the last collection left it */
  #baseline = -Infinity

  constructor(private readonly burstConnections: number) {}

  get open(): number {
    return this.#open
  }

  /** a burst has been reached and not yet collected after: keep looking */
  get watching(): boolean {
    return this.#peak >= this.burstConnections
  }

  opened(): void {
    if (++this.#open > this.#peak) this.#peak = this.#open
    if (this.#open * 10 > this.#peak) this.#goneSeen = false // back: the quiet starts again
  }

  closed(): void {
    this.#open--
  }

  /** one look at `now` with V8's committed heap; true: collect now (then report `collected`) */
  look(now: number, heapCommitted: number): boolean {
    const gone = this.watching && this.#open * 10 <= this.#peak
    if (!gone) {
      this.#goneSeen = false
      return false
    }
    if (!this.#goneSeen) {
      this.#goneSeen = true
      return false
    }
    if (now - this.#lastCollectionAt < MIN_SPACING_MS) return false // still gone: asked again at the next look
    this.#goneSeen = false
    this.#peak = this.#open
    if (heapCommitted - this.#baseline < MIN_HEAP_GROWTH_BYTES) return false // the burst left little behind
    return true
  }

  collected(now: number, heapCommittedAfter: number): void {
    this.#lastCollectionAt = now
    this.#baseline = heapCommittedAfter
  }

  /** what the last burst peaked at (before `look` said collect) */
  get peak(): number {
    return this.#peak
  }
}

type Collect = () => Promise<void>
type Log = { info(obj: object, msg: string): void; warn(obj: object, msg: string): void }

export class MemoryAfterBurst {
  readonly #watch: BurstWatch
  readonly #collections: Counter
  #timer: NodeJS.Timeout | undefined
  #collecting = false
  #stopped = false
  #collect: Collect | undefined

  constructor(
    server: Server,
    private readonly options: MemoryAfterBurstOptions,
    registry: Registry,
    private readonly log: Log,
  ) {
    this.#collections = new Counter({
      name: 'sluice_heap_collections_total',
      help: 'Collections sluice asked V8 for after a burst of client connections had gone, to give the heap back (README "Memory after a burst")',
      registers: [registry],
    })
    this.#watch = new BurstWatch(options.burstConnections)
    if (options.burstConnections === 0) return
    // Counted from the connections themselves, so a burst shorter than one look is seen too.
    server.on('connection', (socket) => {
      this.#watch.opened()
      socket.once('close', () => this.#watch.closed())
      if (this.#timer === undefined && this.#watch.watching && !this.#stopped) this.#startLooking()
    })
  }

  /** stops looking (on close) */
  stop(): void {
    this.#stopped = true
    this.#pause()
  }

  /** looks only while a burst is on or just gone: an idle proxy runs no timer for this */
  #startLooking(): void {
    this.#timer = setInterval(() => this.#look(), this.options.quietMs)
    this.#timer.unref() // never what keeps the process up
  }

  #look(): void {
    if (this.#collecting) return
    const peakConnections = this.#watch.peak
    if (this.#watch.look(performance.now(), getHeapStatistics().total_heap_size)) {
      this.#collecting = true
      void this.#collectOnce(peakConnections).finally(() => (this.#collecting = false))
    }
    if (!this.#watch.watching) this.#pause()
  }

  /** no timer until the next burst (`stop()` is for good) */
  #pause(): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  async #collectOnce(peakConnections: number): Promise<void> {
    const heapCommittedBefore = getHeapStatistics().total_heap_size
    let ms: number
    try {
      this.#collect ??= await memoryPressureCollection()
      const started = performance.now()
      await this.#collect()
      ms = Math.round(performance.now() - started)
    } catch (err) {
      // No inspector (a Node built without one, or --permission without --allow-inspector), or no
      // answer in time: the memory comes back when V8 gets to it.
      this.log.warn({ err }, 'could not ask V8 to give the heap back after a burst of connections')
      return
    }
    const heapCommittedAfter = getHeapStatistics().total_heap_size
    this.#watch.collected(performance.now(), heapCommittedAfter)
    this.#collections.inc()
    this.log.info(
      { peakConnections, heapCommittedBefore, heapCommittedAfter, ms },
      'heap given back after a burst of connections',
    )
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
      let ended = false
      // Disconnecting inside the reply would dispose the agent while V8 still holds its lock: a turn later.
      const end = (err: Error | null): void => {
        if (ended) return
        ended = true
        clearTimeout(timeout)
        setImmediate(() => session.disconnect())
        if (err) reject(err)
        else resolve()
      }
      const timeout = setTimeout(
        () => end(new Error(`no answer from the inspector in ${COLLECTION_TIMEOUT_MS} ms`)),
        COLLECTION_TIMEOUT_MS,
      )
      try {
        session.connect()
        session.post('HeapProfiler.collectGarbage', (err) => end(err))
      } catch (err) {
        end(err instanceof Error ? err : new Error(String(err)))
      }
    })
}
