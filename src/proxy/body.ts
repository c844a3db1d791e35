import { Readable } from 'node:stream'
import { BodyReadError } from './errors.js'

/** A request body as the forwarder needs it: kept whole (so a 429 can be retried) or streamed once. */
export type RequestBody =
  | { readonly kind: 'none' }
  | { readonly kind: 'buffered'; readonly data: Buffer }
  | { readonly kind: 'stream'; readonly stream: Readable; readonly length: number | undefined }

export const NO_BODY: RequestBody = { kind: 'none' }

/**
 * Reads a body of up to `maxBuffer` bytes into memory, before the request queues, so a slow upload
 * never holds a permit. A larger body (by Content-Length, or found larger while reading a chunked one)
 * is streamed to the upstream once its permit is granted: bytes already read are sent first.
 */
export async function readBody(payload: Readable, contentLength: number | undefined, maxBuffer: number): Promise<RequestBody> {
  if (contentLength !== undefined && contentLength > maxBuffer) {
    return { kind: 'stream', stream: payload, length: contentLength }
  }
  const chunks: Buffer[] = []
  let size = 0
  const iterator = payload[Symbol.asyncIterator]() as AsyncIterator<Buffer>
  try {
    for (;;) {
      const next = await iterator.next()
      if (next.done === true) break
      chunks.push(next.value)
      size += next.value.length
      if (size > maxBuffer) {
        const rest = async function* (): AsyncGenerator<Buffer> {
          yield* chunks
          for (;;) {
            const more = await iterator.next()
            if (more.done === true) return
            yield more.value
          }
        }
        return { kind: 'stream', stream: Readable.from(rest(), { objectMode: false }), length: contentLength }
      }
    }
  } catch (err) {
    throw new BodyReadError({ cause: err })
  }
  return size === 0 ? NO_BODY : { kind: 'buffered', data: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) }
}
