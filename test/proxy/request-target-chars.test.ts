import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { rawExchange } from '../support/raw.js'
import { basic, startProxy, type RunningProxy } from '../support/proxy.js'

// README "Endpoints and limits": a request target holding what RFC 3986 does not allow in a path or a
// query — a `#`, a raw space, a control character, a non-ASCII byte, `"<>[]^`{|}`, a `%` without two
// hex digits — is answered 400 in the API's error shape and never reaches the API, whether Node's HTTP
// parser or sluice's own check refuses it. Sent over a raw socket, byte for byte.

/** Everything that reached the API stand-in: request targets, and requests its parser could not read. */
const reached: string[] = []
let api: Server
let proxy: RunningProxy

beforeAll(async () => {
  api = createServer((req, res) => {
    reached.push(`${req.method} ${req.url}`)
    req.resume()
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' }).end('{}'))
  })
  api.on('clientError', (err: Error & { code?: string }, socket) => {
    reached.push(`unparsable: ${err.code}`)
    socket.destroy()
  })
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve))
  const { port } = api.address() as { port: number }
  proxy = await startProxy({ upstream: `http://127.0.0.1:${port}/v2` })
})
beforeEach(() => {
  reached.length = 0
})
afterAll(async () => {
  await proxy?.close()
  await new Promise((resolve) => api?.close(resolve))
})

const AUTH = basic('org1')
const request = (method: string, target: string): Buffer =>
  Buffer.from(
    `${method} ${target} HTTP/1.1\r\nHost: sluice\r\nAuthorization: ${AUTH}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
    'latin1',
  )

const fragment = (part: string, at: number): string =>
  `The ${part} holds a "#" at offset ${at}: a fragment is never sent to a server (percent-encode a "#" that is data as %23)`
const raw = (part: string, name: string, at: number, escape: string): string =>
  `The ${part} holds ${name} at offset ${at}, which a URL cannot hold unencoded; percent-encode it as ${escape}`

// [target as sent (latin1), code, message]; path offsets count from below /v2, query offsets from its `?`,
// request-target offsets (what Node's parser refuses) from the start of the target.
const cases: [string, string, string][] = [
  ['/v2/accounts/5#/contacts', 'SLUICE_BAD_PATH', fragment('path', 11)],
  ['/v2/accounts/search#/a', 'SLUICE_BAD_PATH', fragment('path', 16)],
  ['/v2/accounts/5/contacts?page=1#top', 'SLUICE_BAD_PATH', fragment('query', 7)],
  ['/v2/accounts/5/contacts#?page=1', 'SLUICE_BAD_PATH', fragment('path', 20)],
  ['/v2/accounts/5 x/contacts', 'SLUICE_BAD_PATH', raw('request target', 'a space', 14, '%20')],
  ['/v2/accounts/5/contacts?q=a b', 'SLUICE_BAD_PATH', raw('request target', 'a space', 27, '%20')],
  [
    '/v2/accounts/5\x01/contacts',
    'SLUICE_BAD_PATH_CONTROL_CHAR',
    'The request target holds the control character 0x01 at offset 14',
  ],
  [
    '/v2/accounts/5\t/contacts',
    'SLUICE_BAD_PATH_CONTROL_CHAR',
    'The request target holds the control character 0x09 at offset 14',
  ],
  [
    '/v2/accounts/5\x7f',
    'SLUICE_BAD_PATH_CONTROL_CHAR',
    'The request target holds the control character 0x7F at offset 14',
  ],
  [
    '/v2/accounts/5/contacts?q=\x1b',
    'SLUICE_BAD_PATH_CONTROL_CHAR',
    'The request target holds the control character 0x1B at offset 26',
  ],
  [
    '/v2/customObjects/caf\xc3\xa9',
    'SLUICE_BAD_PATH',
    'The request target holds a non-ASCII byte (0xC3) at offset 21; percent-encode its UTF-8 bytes',
  ],
  [
    '/v2/accounts/5/contacts?q=\xe9',
    'SLUICE_BAD_PATH',
    'The request target holds a non-ASCII byte (0xE9) at offset 26; percent-encode its UTF-8 bytes',
  ],
  ['/v2/accounts/5"/contacts', 'SLUICE_BAD_PATH', raw('path', `'"'`, 11, '%22')],
  ['/v2/accounts/<5>', 'SLUICE_BAD_PATH', raw('path', '"<"', 10, '%3C')],
  ['/v2/accounts/5>', 'SLUICE_BAD_PATH', raw('path', '">"', 11, '%3E')],
  ['/v2/accounts/[5]', 'SLUICE_BAD_PATH', raw('path', '"["', 10, '%5B')],
  ['/v2/accounts/5]', 'SLUICE_BAD_PATH', raw('path', '"]"', 11, '%5D')],
  ['/v2/accounts/5^', 'SLUICE_BAD_PATH', raw('path', '"^"', 11, '%5E')],
  ['/v2/accounts/5`', 'SLUICE_BAD_PATH', raw('path', '"`"', 11, '%60')],
  ['/v2/accounts/{id}/contacts', 'SLUICE_BAD_PATH', raw('path', '"{"', 10, '%7B')],
  ['/v2/accounts/5|6', 'SLUICE_BAD_PATH', raw('path', '"|"', 11, '%7C')],
  ['/v2/accounts/5}', 'SLUICE_BAD_PATH', raw('path', '"}"', 11, '%7D')],
  ['/v2/accounts/5/contacts?ids[]=1', 'SLUICE_BAD_PATH', raw('query', '"["', 4, '%5B')],
  ['/v2/accounts/5/contacts?q={}', 'SLUICE_BAD_PATH', raw('query', '"{"', 3, '%7B')],
  ['/v2/accounts/5/contacts?a=1|2', 'SLUICE_BAD_PATH', raw('query', '"|"', 4, '%7C')],
  ['/v2/accounts/5/contacts?q="x"', 'SLUICE_BAD_PATH', raw('query', `'"'`, 3, '%22')],
  [
    '/v2/accounts/5/contacts?q=%zz',
    'SLUICE_BAD_PATH_ENCODING',
    'Malformed percent-encoding in the query at offset 3: "%zz"',
  ],
  [
    '/v2/accounts/5/contacts?q=%4',
    'SLUICE_BAD_PATH_ENCODING',
    'Malformed percent-encoding in the query at offset 3: "%4"',
  ],
  [
    '/v2/accounts/5/contacts?q=100%',
    'SLUICE_BAD_PATH_ENCODING',
    'Malformed percent-encoding in the query at offset 6: "%"',
  ],
  ['/v2/accounts/5%g0/contacts', 'SLUICE_BAD_PATH_ENCODING', 'The path has a malformed percent-escape'],
]

describe('a request target RFC 3986 does not allow is refused, never forwarded', () => {
  it.each(cases)('GET %j → 400 %s', async (target, code, message) => {
    const answer = await rawExchange(proxy.url, request('GET', target))
    expect({
      status: answer.status,
      type: answer.headers['content-type'],
      body: JSON.parse(answer.body) as unknown,
    }).toEqual({
      status: 400,
      type: 'application/json; charset=utf-8',
      body: [{ code, message }],
    })
    expect(reached).toEqual([])
  })

  it('ten searches with a fragment each, at once: every one 400, none reaches the API (limit 1 never bypassed)', async () => {
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => rawExchange(proxy.url, request('POST', `/v2/accounts/search#/${i}`))),
    )
    for (const answer of answers) {
      expect(answer.status).toBe(400)
      expect(JSON.parse(answer.body)).toEqual([{ code: 'SLUICE_BAD_PATH', message: fragment('path', 16) }])
    }
    expect(reached).toEqual([])
  })

  it('what RFC 3986 does allow — sub-delims, ":" and "@" in the path; "/" and "?" in the query too; escapes — is forwarded as sent', async () => {
    const target = "/v2/customObjects/a!$&'()*+,=:@~b;p=1?q=/x?y:@!$&'()*+,;=%20%7B%7D-._~"
    const answer = await rawExchange(proxy.url, request('GET', target))
    expect(answer.status).toBe(200)
    expect(reached).toEqual([`GET ${target}`])
  })
})
