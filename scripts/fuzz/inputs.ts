/**
 * Generated HTTP requests for the raw-socket fuzz of sluice's front: mostly well-formed requests to
 * real endpoints, bent in the ways that matter to a proxy — path tricks, smuggling pairs of
 * Content-Length and Transfer-Encoding, bad chunked encoding, odd methods and versions, control
 * characters, bare line feeds, over-long heads, and plain garbage. Seeded, so a run can be repeated.
 */

/** A small, fast seeded PRNG (mulberry32). */
export class Rng {
  constructor(private state: number) {}
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) | 0)
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  int(n: number): number {
    return Math.floor(this.next() * n)
  }
  chance(p: number): boolean {
    return this.next() < p
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!
  }
}

export interface FuzzInput {
  readonly bytes: Buffer
  /** HEAD answers have no body: the reader must not wait for one */
  readonly head: boolean
}

const basic = (user: string, key = 'k3y'): string => `Basic ${Buffer.from(`${user}:${key}`).toString('base64')}`

const GOOD_METHODS = ['GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']
const METHODS = [
  'GET',
  'GET',
  'GET',
  'GET',
  'POST',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'HEAD',
  'OPTIONS',
  'TRACE',
  'PROPFIND',
  'CONNECT',
  'get',
  'XYZ',
  'G ET',
  '',
  'GET\x00',
  'MKCOL',
  'PURGE',
]
const PREFIXES = ['/v2', '/v2', '/v2', '/v2', '/V2', '//v2', '/v1', '', '/v2x', '/other', 'http://x/v2', '*']
const VERSIONS = [
  'HTTP/1.1',
  'HTTP/1.1',
  'HTTP/1.1',
  'HTTP/1.1',
  'HTTP/1.0',
  'HTTP/2.0',
  'HTTP/1.1x',
  'HTTP/9.9',
  '',
  'http/1.1',
  'HTTP/1.1 ',
]
const PIECES = [
  '/',
  '//',
  '.',
  '..',
  '/../',
  '/./',
  '%',
  '%2',
  '%2e',
  '%2E%2e',
  '%2f',
  '%2F',
  '%5c',
  '%5C',
  '\\',
  '%00',
  '%0a',
  '%zz',
  '%41',
  '%7e',
  '%c3%a9',
  ';',
  ';x=1',
  '?',
  '?a=b',
  '#f',
  ' ',
  '\t',
  '\x00',
  '\x01',
  '\x7f',
  '\xe9',
  '\xff',
  'ſ',
  'K',
  '{id}',
  '*',
  '@',
  ':',
  '"',
  '<',
  "'",
  '#',
  '#/contacts',
  '#?a=1',
  '%23',
  '>',
  '[',
  ']',
  '^',
  '`',
  '{',
  '}',
  '|',
  '%g1',
  '%4',
  '\xc3\xa9',
  ' x',
]
const IDS = [
  '1',
  '42',
  '007',
  'abc',
  'a-b_c',
  '550e8400-e29b-41d4-a716-446655440000',
  'deadbeefdeadbeefdeadbeef',
  '%31',
  'X',
]
const ORGS = ['org1', 'org2', 'org3', 'fuzz-org', 'Org.With.Dots', 'a@b']
const VERSION_VALUES = [
  '2.12',
  '2.11',
  '2.9',
  '2.6',
  '1.0',
  '2.99',
  'x',
  '2.12, 2.11',
  '',
  ' 2.12 ',
  '2.012',
  '99999999999999999999.1',
  '2.1\x00',
]
const AUTHS = () => [
  basic('org1'),
  basic('org2'),
  basic('fuzz-org'),
  basic(':key'),
  basic('org 1'),
  basic(''),
  'Basic ',
  'Basic !!!',
  'Bearer x',
  'basic ' + Buffer.from('org3:k').toString('base64'),
  'Basic ' + 'A'.repeat(3000),
  '',
]
const EOLS = ['\r\n', '\r\n', '\r\n', '\r\n', '\r\n', '\r\n', '\r\n', '\r\n', '\n', '\r', '\r\r\n']
const TOKENS = [
  'x-a',
  'X-Custom',
  'Accept',
  'Content-Type',
  'Cookie',
  'Forwarded',
  'X-Forwarded-For',
  'Connection',
  'Upgrade',
  'TE',
  'Expect',
  'Keep-Alive',
  'Proxy-Authorization',
  'x-sluice-instance',
  'x-sluice-app',
  'x-request-id',
  'bad name',
  'bad:name',
  'x\x00',
  '',
  ' leading',
  'é',
]
const VALUES = [
  '1',
  'close',
  'keep-alive',
  'Upgrade',
  'websocket',
  '100-continue',
  'trailers',
  'application/json',
  '\x00',
  'a\rb',
  '\x7f',
  '\xe9t\xe9',
  ' ',
  'x'.repeat(200),
  'for=1.2.3.4',
  'Content-Length',
  'Transfer-Encoding',
]

function mutate(rng: Rng, text: string, times: number): string {
  let out = text
  for (let i = 0; i < times; i++) {
    const at = rng.int(out.length + 1)
    out = out.slice(0, at) + rng.pick(PIECES) + out.slice(at)
  }
  return out
}

function target(rng: Rng, templates: readonly string[]): string {
  const template = rng.pick(templates).replace(/\{[^}]+\}/g, () => rng.pick(IDS))
  let path = rng.pick(PREFIXES) + template
  if (rng.chance(0.3)) path = mutate(rng, path, 1 + rng.int(3))
  if (rng.chance(0.01)) path += '/' + 'a'.repeat(rng.pick([9_000, 20_000, 70_000]))
  if (rng.chance(0.1))
    path += rng.pick([
      '?page=1',
      '?q=a%20b',
      '?x=\xe9',
      '?',
      '?a=%zz',
      '#frag',
      '?a=1#f',
      '?ids[]=1',
      '?q={}',
      '?a=1|2',
      '?a=%4',
      '?a=100%',
      '?q="x"',
      '?a=b c',
      "?p=/x?y:@!$&'()*+,;=",
    ])
  return path
}

function chunked(rng: Rng, body: string): string {
  if (rng.chance(0.7)) return `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`
  return rng.pick([
    `${body.length.toString(16)}\r\n${body}\r\nZZ\r\n`,
    `-1\r\n${body}\r\n0\r\n\r\n`,
    `${body.length.toString(16)};ext=${'e'.repeat(rng.int(20_000))}\r\n${body}\r\n0\r\n\r\n`,
    `${(body.length + 5).toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    `0\r\n\r\n${body}`,
    `${body.length.toString(16)}\n${body}\n0\n\n`,
    `ffffffffffffffffff\r\n${body}\r\n`,
  ])
}

/** One generated input. `templates` are the catalog's path templates (`/accounts/{id}`). */
export function generateInput(rng: Rng, templates: readonly string[]): FuzzInput {
  // plain garbage, now and then
  if (rng.chance(0.02)) {
    const garbage = rng.pick([
      () => Buffer.from(Array.from({ length: 1 + rng.int(300) }, () => rng.int(256))),
      () => Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'),
      () => Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03]),
      () => Buffer.from('\r\n\r\nGET /v2/accounts HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'latin1'),
    ])()
    return { bytes: garbage, head: false }
  }
  // most request lines are sane, so the rest of the input gets past the parser and is tried too
  const sane = rng.chance(0.7)
  const method = sane ? rng.pick(GOOD_METHODS) : rng.pick(METHODS)
  const eol = rng.chance(0.9) ? '\r\n' : rng.pick(EOLS)
  const lines: string[] = []
  lines.push(`${method} ${target(rng, templates)} ${sane ? 'HTTP/1.1' : rng.pick(VERSIONS)}`)
  if (!rng.chance(0.03)) lines.push(`Host: ${rng.chance(0.97) ? 'sluice' : rng.pick(['', 'a b', 'x\x00'])}`)
  if (rng.chance(0.02)) lines.push('Host: second')
  if (rng.chance(0.85)) lines.push(`Authorization: ${rng.chance(0.6) ? basic(rng.pick(ORGS)) : rng.pick(AUTHS())}`)
  if (rng.chance(0.4)) lines.push(`NEON-API-VERSION: ${rng.pick(VERSION_VALUES)}`)
  for (let i = rng.int(3); i > 0; i--) lines.push(`${rng.pick(TOKENS)}: ${rng.pick(VALUES)}`)
  if (rng.chance(0.01)) lines.push(`X-Huge: ${'h'.repeat(rng.pick([10_000, 70_000]))}`)
  if (rng.chance(0.01)) lines.push(' obs-fold continuation')

  // the body and its framing: matching, smuggling pairs, broken chunks
  const body = rng.chance(0.5) ? '' : JSON.stringify({ name: 'x'.repeat(rng.int(200)) })
  let payload = ''
  const framing = rng.int(20)
  if (framing < 10) {
    if (body !== '' || rng.chance(0.2)) lines.push(`Content-Length: ${body.length}`)
    payload = body
  } else if (framing < 13) {
    lines.push('Transfer-Encoding: chunked')
    payload = chunked(rng, body)
  } else if (framing === 13) {
    lines.push(`Content-Length: ${body.length}`, 'Transfer-Encoding: chunked')
    payload = chunked(rng, body)
  } else if (framing === 14) {
    lines.push(`Content-Length: ${body.length}`, `Content-Length: ${body.length + 1}`)
    payload = body
  } else if (framing === 15) {
    lines.push(`Content-Length: ${rng.pick(['-1', 'abc', '1, 2', '0x10', ' 5', '99999999999999999999', '+5'])}`)
    payload = body
  } else if (framing === 16) {
    lines.push(
      `Transfer-Encoding: ${rng.pick(['gzip, chunked', 'chunked, gzip', ' chunked', 'xchunked', 'chunked\x00', 'identity', 'chunked, chunked'])}`,
    )
    payload = chunked(rng, body)
  } else if (framing === 17) {
    // a shorter Content-Length than the body: the rest is read as a second, smuggled request
    lines.push(`Content-Length: ${Math.max(0, body.length - 10)}`)
    payload = body + 'GET /v2/accounts/1 HTTP/1.1\r\nHost: x\r\n\r\n'
  } else if (framing === 18 && rng.chance(0.05)) {
    // a body that never arrives whole: answered when the request timeout runs out
    lines.push(`Content-Length: ${body.length + 100}`)
    payload = body
  } else {
    payload = ''
  }
  if (rng.chance(0.97)) lines.push('Connection: close')
  let head = lines.join(eol) + eol + eol
  if (rng.chance(0.005)) head = head.slice(0, rng.int(head.length)) // headers that never end
  return { bytes: Buffer.from(head + payload, 'latin1'), head: method === 'HEAD' }
}
