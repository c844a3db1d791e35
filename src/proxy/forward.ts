import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from 'node:http'
import type { Dispatcher } from 'undici'

export interface ForwardCallbacks {
  /**
   * The upstream's status line and headers arrived. Return the headers to answer the client with,
   * and its body is passed on; return undefined and the body is read out and dropped (an upstream
   * 429 that will be retried, a client that has gone).
   */
  onHead(statusCode: number, headers: IncomingHttpHeaders): OutgoingHttpHeaders | undefined
  /**
   * Once: the upstream is done with the request — its answer read to the end, or failed. `cutOff`
   * is true when it failed after its head had been passed to the client; `failed` whenever it failed.
   */
  onDone(cutOff: boolean, failed: boolean): void
  /** Every chunk of the answer's body, passed on or not (a copy kept for identical requests, the cache). */
  onChunk?(chunk: Buffer): void
  /**
   * Asked at the last moment before the request is written to the upstream socket (undici calls
   * the handler's start once a connection is ready, which may be long after the dispatch: a new
   * socket connecting, a process stalled meanwhile). An error returned stops the request unsent:
   * `forward` rejects with it (and `onDone` is still called once).
   */
  beforeSend?(): Error | undefined
}

/**
 * Sends one request upstream and pipes the answer straight into the client's response, without an
 * intermediate stream: undici's dispatch callbacks write to `res`, and back-pressure pauses the
 * upstream read. Resolves with the upstream status once the head has been handled (the body may
 * still be flowing); rejects when the upstream failed before answering (nothing was written then).
 * A failure after the head tears the client's response down, since its status is already sent.
 */
export function forward(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions, res: ServerResponse, callbacks: ForwardCallbacks): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    dispatcher.dispatch(options, new PipeToClient(res, callbacks, resolve, reject))
  })
}

class PipeToClient implements Dispatcher.DispatchHandler {
  /** true while the body goes to the client; false when it is dropped */
  private passing = false
  private answered = false
  private done = false

  constructor(
    private readonly res: ServerResponse,
    private readonly callbacks: ForwardCallbacks,
    private readonly resolve: (status: number) => void,
    private readonly reject: (err: Error) => void,
  ) {}

  // Called by undici right before the request is written to the socket.
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
    this.callbacks.onChunk?.(chunk)
    if (!this.passing) return
    if (this.res.destroyed) {
      // The client left mid-answer: keep reading, so the permit goes back when the API is done.
      this.passing = false
      return
    }
    if (!this.res.write(chunk)) {
      controller.pause()
      const resume = (): void => {
        this.res.off('drain', resume)
        this.res.off('close', resume)
        controller.resume()
      }
      this.res.on('drain', resume)
      this.res.on('close', resume)
    }
  }

  onResponseEnd(): void {
    if (this.passing) this.res.end()
    this.finish(false, false)
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    const cutOff = this.passing
    if (!this.answered) this.reject(err)
    else if (cutOff) this.res.destroy() // the status is sent: the client sees the answer cut off
    this.finish(cutOff, true)
  }

  private finish(cutOff: boolean, failed: boolean): void {
    if (this.done) return
    this.done = true
    this.callbacks.onDone(cutOff, failed)
  }
}
