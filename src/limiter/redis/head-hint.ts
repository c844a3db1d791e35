import { appOfId } from './waiter-id.js'

/**
 * The waiter Redis last named as the head of one key's queue, as far as this replica may believe it
 * (docs/redis-limiter.md, "How a wait works": "Inside one replica"). Part of KeySemaphore.
 */
export class HeadHint {
  #head: string | undefined
  /** Stale-head messages read so far: they and script replies come on two connections, unordered, so a reply's head is believed only if none was read since. */
  #staleMessages = 0
  /**
   * The mark at which a reply said the queue was empty (an acquire granted at once): believed while no
   * stale-head message was read since and nothing named a waiter; undefined once something did. Kept
   * permits live on it (kept-permits.ts).
   */
  #quietAt: number | undefined

  /** Where the stale-head messages stand now: a script sent now passes it back with its reply (`fromReply`). */
  get mark(): number {
    return this.#staleMessages
  }

  /** A grant message named the head left in the queue (a waiter was queued: the queue is not known empty). */
  named(head: string | undefined): void {
    this.#head = head
    this.#quietAt = undefined
  }

  /** An acquire sent at `mark` was answered: `empty`, granted and its grant found the queue empty (and Redis knew us). */
  queueHeard(empty: boolean, mark: number): void {
    this.#quietAt = empty && this.#staleMessages === mark ? mark : undefined
  }

  /** Something said a waiter may be queued (a queued reply, a permit lost, Redis gone or changed): not known empty. */
  noisy(): void {
    this.#quietAt = undefined
  }

  /** Nobody has queued for the key since Redis said its queue was empty, as far as this replica has heard. */
  get quiet(): boolean {
    return this.#quietAt === this.#staleMessages
  }

  /** A stale-head message: a waiter re-queued by its age may have gone ahead of the head named. */
  stale(): void {
    this.#head = undefined
    this.#staleMessages++
  }

  /** The head a script's reply named, the script sent at `mark`: forgotten instead if a stale-head message was read since. */
  fromReply(head: string | undefined, mark: number): void {
    this.#head = this.#staleMessages === mark ? head : undefined
    if (head !== undefined) this.#quietAt = undefined
  }

  /** A waiter of `app` goes out and may pass the named head (placed by age, or another app's), which is then forgotten. */
  sending(app: string, keepAge: boolean): void {
    if (keepAge || (this.#head !== undefined && appOfId(this.#head) !== app)) this.#head = undefined
  }

  /** The head named, used once (a release looks for its handover). */
  take(): string | undefined {
    const head = this.#head
    this.#head = undefined
    return head
  }
}
