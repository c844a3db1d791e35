import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp, type App } from '../../src/app.js'
import { loadSettings } from '../../src/config/load.js'
import { send } from '../support/http.js'

// A refusal's debug line (src/errors/reply.ts) is one JSON object with one `msg`: its error's text is
// a field of its own, not a second `msg` (which most JSON readers silently collapse to the last one).
// The raw lines are read, as a log shipper gets them. Through the real proxy and admin server.

const lines: string[] = []
let app: App
let urls: { proxyUrl: string; adminUrl: string }

beforeAll(async () => {
  const settings = loadSettings(
    {},
    {
      host: '127.0.0.1',
      adminHost: '127.0.0.1',
      port: 0,
      adminPort: 0,
      logLevel: 'debug',
      upstream: 'http://127.0.0.1:9/v2',
    },
  )
  const logStream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      )
      done()
    },
  })
  app = await buildApp(settings, { logStream })
  urls = await app.listen()
})
afterAll(() => app?.close())

const refusals = (): string[] => lines.filter((l) => l.includes('request refused'))

describe('a refusal line', () => {
  it('has one msg, and the code and the error text as fields of their own (proxy port and admin port)', async () => {
    expect((await send(urls.proxyUrl, '/v2/accounts/../search')).status).toBe(400)
    expect((await send(urls.adminUrl, '/nothing-here')).status).toBe(404)
    const found = refusals()
    expect(found).toHaveLength(2)
    for (const line of found) expect(line.match(/"msg":/g)).toHaveLength(1)
    expect(found.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({
        level: 20,
        msg: 'request refused',
        code: 'SLUICE_BAD_PATH_TRAVERSAL',
        reason: '"." and ".." segments are not allowed: "/accounts/../search"',
      }),
      expect.objectContaining({
        level: 20,
        msg: 'request refused',
        code: 'SLUICE_NOT_FOUND',
        reason: expect.stringMatching(/^There is no \/nothing-here; there are /) as string,
      }),
    ])
  })
})
