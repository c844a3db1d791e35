import { z } from 'zod'

/** How long and how much sluice waits for clients on its proxy port, so none holds a permit hostage (docs/requests.md, "Slow and hostile clients"). */
export const clientSettingsSchema = z
  .strictObject({
    /** the request line and headers must have arrived within this time of the connection's request start → 408 */
    headersTimeoutMs: z.number().int().positive().default(10_000),
    /** the whole request, body included, must have arrived within this → 408 (a streamed body waits in the queue unread, so keep it above queue.maxWaitMs) */
    requestTimeoutMs: z.number().int().positive().default(300_000),
    /** an idle keep-alive connection is closed after this */
    keepAliveTimeoutMs: z.number().int().positive().default(72_000),
    /** a request body must bring this many bytes in every `bodyGraceMs` of waiting on it, after the first → 408 (0: no minimum) */
    minBodyBytesPerSecond: z.number().int().nonnegative().default(16_384),
    /** the window of the minimum body rate; the first window is a grace period */
    bodyGraceMs: z.number().int().positive().default(5_000),
    /** answer bytes held for a client that reads slower than the API sends, before the API's answer is paused */
    answerBufferBytes: z.number().int().positive().default(4_194_304),
    /** a client that has not taken its held answer bytes within this (capped at upstreamTimeouts.bodyMs) is cut off */
    writeTimeoutMs: z.number().int().positive().default(30_000),
    /** longest request target (path and query) → 414 */
    maxUrlBytes: z.number().int().min(256).default(8_192),
    /** longest request line and headers together (Node's maxHeaderSize) → 431, or 414 when the request line alone is over it */
    maxHeaderBytes: z.number().int().min(1_024).default(16_384),
  })
  .refine((s) => s.headersTimeoutMs <= s.requestTimeoutMs, {
    message: 'must not be longer than client.requestTimeoutMs (SLUICE_CLIENT_REQUEST_TIMEOUT_MS)',
    path: ['headersTimeoutMs'],
  })
export type ClientSettings = z.output<typeof clientSettingsSchema>
