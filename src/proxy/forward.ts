import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Dispatcher } from 'undici'
import type { MemoryBudget, Reservation } from '../budget/budget.js'
import { holdWrites, type HeldAnswer } from './answer-writes.js'

export interface ForwardCallbacks {
  /** The upstream's head arrived: the headers to answer the client with, or undefined to read the body out and drop it. */
  onHead(statusCode: number, headers: IncomingHttpHeaders): OutgoingHttpHeaders | undefined
  /**
   * Once: the upstream is done with the request — its answer read to the end, or failed. `cutOff`
   * is true when it failed after its head had been passed to the client; `failed` whenever it failed, with `error`.
   */
  onDone(cutOff: boolean, failed: boolean, error?: Error): void
  /** Every chunk of the answer's body; true while a whole copy is kept anyway, so a slow client does not pause the API's answer. */
  onChunk?(chunk: Buffer): boolean
  /** Asked right before the request is written upstream; an error returned stops it unsent (`forward` rejects with it, `onDone` still runs). */
  beforeSend?(): Error | undefined
  /** The client did not take its answer within `writeTimeoutMs`: it has been cut off. */
  onClientCut(): void
  /** who holds the answer's bytes in the memory budget, within its share (an app; the organisation with app identity off) */
  readonly holder?: string
}

/** How much of an answer is held for a client that reads slower than the API sends, and for how long. */
export interface AnswerLimits {
  /** bytes held in the client's response before the API's answer is paused */
  readonly bufferBytes: number
  /** how long the API's answer may stay paused (and, once it has ended, how long the client may take the rest) before the client is cut off */
  readonly writeTimeoutMs: number
  /** bytes held for a slow client count in it; past it the API's answer pauses at once (docs/deploy.md, "Memory: a budget") */
  readonly budget?: MemoryBudget
}

/**
 * Sends one request upstream and writes the answer straight into the client's response; resolves once
 * the head is handled, rejects when the upstream failed before answering. A slow client is held to
 * `limits`, so the API's answer is always read to its end (docs/requests.md, "Slow and hostile clients").
 */
export function forward(
  dispatcher: Dispatcher,
  options: Dispatcher.DispatchOptions,
  res: ServerResponse,
  callbacks: ForwardCallbacks,
  limits: AnswerLimits,
): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    dispatcher.dispatch(options, new PipeToClient(res, callbacks, limits, resolve, reject))
  })
}

class PipeToClient implements Dispatcher.DispatchHandler, HeldAnswer {
  /** true while the body goes to the client; false when it is dropped */
  private passing = false
  private answered = false
  private done = false

  private stalled: NodeJS.Timeout | undefined
  /** the answer bytes held for the client, in the memory budget: made at the first write the client is not keeping up with */
  private buffered: Reservation | undefined
  held: Socket | undefined
  after: (() => void) | undefined

  constructor(
    readonly res: ServerResponse,
    private readonly callbacks: ForwardCallbacks,
    private readonly limits: AnswerLimits,
    private readonly resolve: (status: number) => void,
    private readonly reject: (err: Error) => void,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController): void {
    const refusal = this.callbacks.beforeSend?.()
    if (refusal !== undefined) controller.abort(refusal)
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return // 1xx informational: the final answer follows
    this.answered = true
    try {
      const clientHeaders = this.callbacks.onHead(statusCode, headers)
      if (clientHeaders !== undefined && !this.res.destroyed) {
        this.res.writeHead(statusCode, clientHeaders)
        this.passing = true
      }
    } catch (err) {
      // A head Node refuses to send (undici's parser already refuses most): nothing reached the
      // client, so fail as the upstream failing, and stop reading; onResponseError then releases.
      this.reject(err as Error)
      controller.abort(err as Error)
      return
    }
    this.resolve(statusCode)
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const kept = this.callbacks.onChunk?.(chunk) === true
    if (!this.passing) return
    if (this.res.destroyed) {
      // The client left mid-answer: keep reading, so the permit goes back when the API is done.
      this.passing = false
      return
    }
    holdWrites(this)
    if (this.res.write(chunk)) return
    const fits = this.holdInBudget()
    if (!kept && (this.res.writableLength > this.limits.bufferBytes || !fits)) {
      controller.pause()
      const resume = (): void => {
        clearTimeout(this.stalled)
        this.res.off('drain', resume)
        this.res.off('close', resume)
        controller.resume()
      }
      this.res.on('drain', resume)
      this.res.on('close', resume)
      // close → resume, and the next chunk finds the response destroyed and drops the rest
      this.stalled = setTimeout(() => this.cutClient(), this.limits.writeTimeoutMs).unref()
    }
  }

  onResponseEnd(): void {
    // The API is done with the request: the permit goes back first, and the answer's end follows
    // the requests this turn started (answer-writes.ts).
    this.finish(false, false)
    if (!this.passing) return
    const end = (): void => {
      this.res.end()
      // The held rest of the answer waits for the client only so long.
      cutIfNotTaken(this.res, this.limits.writeTimeoutMs, () => this.callbacks.onClientCut())
    }
    if (holdWrites(this)) this.after = end
    else end()
  }

  /** Counts the bytes the response holds now in the budget; false while the budget is exceeded. */
  private holdInBudget(): boolean {
    const budget = this.limits.budget
    if (budget === undefined) return true
    if (this.buffered === undefined) {
      const buffered = (this.buffered = budget.reserve('answer', 0, this.callbacks.holder)!)
      // released once, whichever way the response ends
      this.res.once('close', () => buffered.release())
      this.res.on('drain', () => buffered.set(this.res.writableLength))
    }
    return this.buffered.set(this.res.writableLength)
  }

  private cutClient(): void {
    if (this.res.writableFinished || this.res.destroyed) return
    this.callbacks.onClientCut()
    this.res.destroy()
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    const cutOff = this.passing
    if (!this.answered) this.reject(err)
    else if (cutOff) this.res.destroy() // the status is sent: the client sees the answer cut off
    this.finish(cutOff, true, err)
  }

  private finish(cutOff: boolean, failed: boolean, error?: Error): void {
    if (this.done) return
    this.done = true
    this.callbacks.onDone(cutOff, failed, error)
  }
}

/**
 * After `res.end()`: a client that has not taken the answer held for it within `ms` is cut off
 * (`onCut` first); bytes already with the kernel are bounded by the keep-alive timeout.
 */
export function cutIfNotTaken(res: ServerResponse, ms: number, onCut: () => void): void {
  if (res.writableLength === 0 || res.writableFinished || res.destroyed) return
  const stalled = setTimeout(() => {
    if (res.writableFinished || res.destroyed) return
    onCut()
    res.destroy()
  }, ms)
  stalled.unref()
  res.once('close', () => clearTimeout(stalled))
}
