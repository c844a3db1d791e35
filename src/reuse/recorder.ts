import type { OutgoingHttpHeaders } from 'node:http'
import { headersSize, type StoredAnswer } from './answer.js'

/** Keeps a copy of an upstream answer as it streams to its own client, up to `maxBytes`. */
export class Recorder {
  readonly #chunks: Buffer[] = []
  #bytes = 0

  private constructor(
    readonly status: number,
    readonly headers: OutgoingHttpHeaders,
    private readonly maxBytes: number,
  ) {}

  /** A recorder for an answer, or undefined when its Content-Length already says it is too large. */
  static start(status: number, headers: OutgoingHttpHeaders, maxBytes: number): Recorder | undefined {
    const length = Number(headers['content-length'])
    if (Number.isFinite(length) && length > maxBytes) return undefined
    return new Recorder(status, headers, maxBytes)
  }

  /** false once the answer has grown past the bound (the copy is dropped) */
  add(chunk: Buffer): boolean {
    this.#bytes += chunk.length
    if (this.#bytes > this.maxBytes) {
      this.#chunks.length = 0
      return false
    }
    this.#chunks.push(chunk)
    return true
  }

  finish(now: number): StoredAnswer {
    const body = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#bytes)
    return {
      status: this.status,
      headers: this.headers,
      body,
      storedAt: now,
      size: body.length + headersSize(this.headers),
    }
  }
}
