import type { Permit } from '../types.js'
import type { Fallback } from './fallback.js'
import type { HeardRegistry } from './heard-registry.js'
import { Ticket, type SluicePermit } from './ticket.js'

/**
 * A replica back on Redis from the `local` fallback before the others: another may still serve from its
 * share permits Redis cannot count yet. Until every replica it heard alive has beaten since it came back
 * (a replica beats only once its fallback permits are counted in Redis) or is given up, its tickets take
 * a slot of its local share before they wait in Redis and its permits keep theirs, so it holds no more
 * than its share (docs/redis-limiter.md, "Failure modes").
 */
export class ReturnGate {
  /** Redis ms of the reading this replica came back with; undefined while the gate is open */
  #since: number | undefined
  readonly #slots = new Map<Ticket, Permit>()
  /** monotonic ms until which this replica beats every probe: one back later sees it back at once */
  #beatUntil = -Infinity

  constructor(
    private readonly fallback: Fallback,
    private readonly heard: HeardRegistry,
    /** puts a ticket in Redis's queue */
    private readonly enqueue: (ticket: Ticket) => void,
    /** routes a ticket by the mode (the gate opened while it waited for a slot) */
    private readonly reroute: (ticket: Ticket) => void,
  ) {}

  get isOpen(): boolean {
    return this.#since === undefined
  }

  /** Back on Redis at `since` (Redis ms), in `local` fallback until then: the gate closes. */
  closeSince(since: number): void {
    this.#since = since
    this.#beatUntil = performance.now() + this.heard.staleMs
  }

  /** Whether to beat at each probe (250 ms), not only each `L/3`: closed, or back for less than `2L/3`. */
  beatsOften(): boolean {
    return !this.isOpen || performance.now() < this.#beatUntil
  }

  /** Whether the gate may open: every replica heard alive is back or given up. */
  othersBack(): boolean {
    return this.#since !== undefined && this.heard.othersBackSince(this.#since)
  }

  /**
   * Every replica heard alive is back (or given up): the tickets waiting for a slot of the share are
   * routed to Redis, oldest first, before any slot or pin is freed; then this replica leaves its share.
   */
  openIfAllBack(): void {
    if (!this.othersBack()) return
    const waiting = this.fallback.takeWaiting()
    this.#since = undefined
    for (const ticket of waiting) this.reroute(ticket)
    this.open()
    this.fallback.unpinAll()
  }

  /** Opens the gate (every replica back, or Redis lost again); the slots its tickets hold are freed. */
  open(): void {
    this.#since = undefined
    for (const slot of this.#slots.values()) slot.release()
    this.#slots.clear()
  }

  /**
   * The fallback's permits are counted in Redis (`done` frees or, the gate closed, pins their local slots):
   * with the gate open this replica's pins go too, as on any return.
   */
  countedIn(done: (keep: boolean) => void): void {
    done(!this.isOpen)
    if (this.isOpen) this.fallback.unpinAll()
  }

  /**
   * On Redis, a ticket goes to Redis's queue; with the gate closed it takes a slot of the share first, one
   * that already holds a slot (sent back to the queue) goes at once. If the gate opened meanwhile it is routed again.
   */
  route(ticket: Ticket): void {
    if (this.isOpen || this.#slots.has(ticket)) return this.enqueue(ticket)
    this.fallback.gate(ticket, (local) => {
      if (ticket.settled) return local.release()
      if (this.isOpen) {
        local.release()
        return this.reroute(ticket)
      }
      this.#slots.set(ticket, local)
      this.enqueue(ticket)
    })
  }

  /**
   * A ticket made while the gate is closed: its permit keeps its slot, its failure frees it. One made
   * while open costs nothing here; if the gate closes before it is served, its slot stays taken until
   * the gate opens (fewer than the share, never more).
   */
  watched(...[key, options, resolve, reject, onSettled, deadlines]: ConstructorParameters<typeof Ticket>): Ticket {
    const granted = (permit: SluicePermit): void => {
      this.granted(ticket, permit)
      resolve(permit)
    }
    const failed = (err: Error): void => {
      this.left(ticket)
      reject(err)
    }
    const ticket = new Ticket(key, options, granted, failed, onSettled, deadlines)
    return ticket
  }

  /** The ticket got its permit: a Redis one keeps the ticket's slot while the gate is closed. */
  granted(ticket: Ticket, permit: SluicePermit): void {
    const slot = this.#slots.get(ticket)
    if (!slot) return
    this.#slots.delete(ticket)
    if (permit.grant.kind === 'redis' && !this.isOpen) this.fallback.pinWith(permit, slot)
    else slot.release()
  }

  /** The ticket failed or left Redis: its slot, if any, is free. */
  left(ticket: Ticket): void {
    this.#slots.get(ticket)?.release()
    this.#slots.delete(ticket)
  }
}
