import type { Readable } from 'node:stream'

const DONE: IteratorResult<Buffer> = { value: undefined, done: true }

/**
 * A request body's chunks, pulled one at a time. Node's own async iterator leaves seven closures on
 * the request until it is collected, which a queued request would keep all its wait; ours only while a chunk is
 * awaited.
 */
export function bodyChunks(stream: Readable): AsyncIterator<Buffer> {
  let ended = false
  return {
    next(): Promise<IteratorResult<Buffer>> {
      return new Promise<IteratorResult<Buffer>>((resolve, reject) => {
        // true when the answer is known now
        const settle = (): boolean => {
          if (stream.errored !== null) {
            reject(stream.errored)
            return true
          }
          const chunk = stream.read() as Buffer | null
          if (chunk !== null) {
            resolve({ value: chunk, done: false })
            return true
          }
          if (ended || stream.readableEnded) {
            ended = true
            resolve(DONE)
            return true
          }
          if (stream.destroyed) {
            reject(prematureClose())
            return true
          }
          return false
        }
        if (settle()) return
        const off = (): void => {
          stream.off('readable', onReadable)
          stream.off('end', onEnd)
          stream.off('error', onError)
          stream.off('close', onClose)
        }
        const onReadable = (): void => {
          if (settle()) off()
        }
        const onEnd = (): void => {
          ended = true
          off()
          resolve(DONE)
        }
        const onError = (err: Error): void => {
          off()
          reject(err)
        }
        const onClose = (): void => {
          off()
          if (stream.readableEnded) resolve(DONE)
          else reject(stream.errored ?? prematureClose())
        }
        stream.on('readable', onReadable)
        stream.on('end', onEnd)
        stream.on('error', onError)
        stream.on('close', onClose)
      })
    },
  }
}

const prematureClose = (): Error =>
  Object.assign(new Error('the request closed before its body ended'), { code: 'ERR_STREAM_PREMATURE_CLOSE' })
