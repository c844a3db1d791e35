import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { readBody } from '../../src/proxy/body.js'

const EVENTS = ['readable', 'end', 'error', 'close', 'data', 'finish'] as const
const listeners = (s: PassThrough): Record<string, number> =>
  Object.fromEntries(EVENTS.map((e) => [e, s.listenerCount(e)]))
const pace = { minBytesPerSecond: 0, windowMs: 1_000 }

describe('reading a request body', () => {
  it('leaves no listener on the request once the body is in (a queued request keeps nothing of the reading)', async () => {
    const payload = new PassThrough()
    const before = listeners(payload)
    const reading = readBody(payload, undefined, 1_048_576, pace)
    payload.write('{"a":')
    setTimeout(() => payload.end('1}'), 5)
    const body = await reading
    expect(body.kind === 'buffered' && body.data.toString()).toBe('{"a":1}')
    expect(listeners(payload)).toEqual(before)
  })

  it('fails when the request closes before its body ended, and leaves no listener', async () => {
    const payload = new PassThrough()
    const before = listeners(payload)
    const reading = readBody(payload, 10, 1_048_576, pace)
    payload.write('{"a"')
    setTimeout(() => payload.destroy(), 5)
    await expect(reading).rejects.toMatchObject({ code: 'SLUICE_BAD_BODY' })
    expect(listeners(payload)).toEqual(before)
  })
})
