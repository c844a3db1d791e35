import { Readable } from 'node:stream'
import { bodyChunks } from './body-chunks.js'
import { PacedBody, type BodyPace } from './body-pace.js'
import { MemoryBudgetError } from '../budget/errors.js'
import { BodyReadError, BodyTooSlowError } from './errors.js'

/** A request body as the forwarder needs it: kept whole (so a 429 can be retried) or streamed once. */
export type RequestBody =
  | { readonly kind: 'none' }
  | { readonly kind: 'buffered'; readonly data: Buffer }
  | { readonly kind: 'stream'; readonly stream: Readable; readonly length: number | undefined }

export const NO_BODY: RequestBody = { kind: 'none' }

/**
 * Reads a body of up to `maxBuffer` bytes before the request queues, so a slow upload never holds a
 * permit; a larger one streams once its permit is granted, at `pace` (docs/requests.md, "Slow and hostile clients").
 * `hold`: each chunk kept counted in the memory budget (a body of undeclared length); it throws when full.
 */
export async function readBody(
  payload: Readable,
  contentLength: number | undefined,
  maxBuffer: number,
  pace: BodyPace,
  hold?: (bytes: number) => void,
): Promise<RequestBody> {
  const iterator = new PacedBody(bodyChunks(payload), pace)
  if (contentLength !== undefined && contentLength > maxBuffer) {
    return { kind: 'stream', stream: Readable.from(rest(iterator, []), { objectMode: false }), length: contentLength }
  }
  const chunks: Buffer[] = []
  let size = 0
  try {
    for (;;) {
      const next = await iterator.next()
      if (next.done === true) break
      hold?.(next.value.length)
      chunks.push(next.value)
      size += next.value.length
      if (size > maxBuffer) {
        return {
          kind: 'stream',
          stream: Readable.from(rest(iterator, chunks), { objectMode: false }),
          length: contentLength,
        }
      }
    }
  } catch (err) {
    if (err instanceof BodyTooSlowError || err instanceof MemoryBudgetError) throw err
    throw new BodyReadError({ cause: err })
  }
  return size === 0
    ? NO_BODY
    : { kind: 'buffered', data: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) }
}

/** The chunks already read, then the rest of the body as the client sends it. */
async function* rest(iterator: PacedBody, first: readonly Buffer[]): AsyncGenerator<Buffer> {
  yield* first
  for (;;) {
    const more = await iterator.next()
    if (more.done === true) return
    yield more.value
  }
}

/** A Content-Length header's value, or undefined when absent or not a whole number of bytes. */
export function contentLengthOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined
}
