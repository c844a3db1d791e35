import { appOfId } from './waiter-id.js'

/**
 * The waiter Redis last named as the head of one key's queue (in a grant message or a script's
 * reply), as far as this replica may believe it: when it is one of ours and every permit of the key is
 * here, a permit released here may be handed to it (KeySemaphore.handOver; docs/redis-limiter.md,
 * "Inside one replica"). Part of KeySemaphore.
 */
export class HeadHint {
  #head: string | undefined
  /**
   * Stale-head messages read so far. They come on the subscriber connection, a script's reply on the
   * command connection, unordered: a reply naming a head is believed only if none was read since its
   * script was sent (the head it names may be the older one).
   */
  #staleMessages = 0

  /** Where the stale-head messages stand now: a script sent now passes it back with its reply (`fromReply`). */
  get mark(): number {
    return this.#staleMessages
  }

  /** A grant message named the head left in the queue. */
  named(head: string | undefined): void {
    this.#head = head
  }

  /** A stale-head message: a waiter re-queued by its age may have gone ahead of the head named. */
  stale(): void {
    this.#head = undefined
    this.#staleMessages++
  }

  /** The head a script's reply named, the script sent at `mark`: forgotten instead if a stale-head message was read since. */
  fromReply(head: string | undefined, mark: number): void {
    this.#head = this.#staleMessages === mark ? head : undefined
  }

  /**
   * A waiter of `app` goes out: placed by its age (`keepAge`), or of an app other than the named
   * head's (whose start tag may be lower), it may go ahead of that head, which is forgotten. One of
   * the head's own app queues behind it (FIFO within an app).
   */
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
