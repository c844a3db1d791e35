import type { IncomingHttpHeaders } from 'node:http'
import { describe, expect, it } from 'vitest'
import { DEFAULT_CATALOG_FILE, loadCatalog } from '../../src/catalog/index.js'
import { admissionRules, admit, type Admission, type RequestFacts } from '../../src/proxy/admission.js'
import { BadInstanceError } from '../../src/proxy/errors.js'
import { createVersioning } from '../../src/versioning/index.js'
import { versionSettingsSchema } from '../../src/versioning/settings.js'

// Admission is a pure function of a request's facts and the rules (src/proxy/admission.ts): checked
// here without a server, case by case, with the real catalog and the real version calendar. Each
// refusal is the whole answer (status, code, message) with its outcome, and says whether it waits for
// identity (afterIdentity) and which endpoint the record names.

const quiet = { info: () => {}, warn: () => {}, error: () => {} }
const catalog = loadCatalog(DEFAULT_CATALOG_FILE, { defaultLimit: 5, overrides: {} })
const versioningOn = (day: string) =>
  createVersioning(versionSettingsSchema.parse({}), { now: () => new Date(day), log: quiet })
const settings = {
  basePath: '/v2',
  client: { maxUrlBytes: 256 },
  queue: { waitHeader: 'x-sluice-max-wait', maxWaitMs: 60_000 },
}
// API v1 was retired on 2026-07-11 (config/versions.yaml)
const rules = admissionRules(settings, catalog, versioningOn('2026-08-01T00:00:00Z'))
const rulesBeforeV1Retired = admissionRules(settings, catalog, versioningOn('2026-01-01T00:00:00Z'))

const ARRIVED = 1_000_000
const facts = (o: Partial<RequestFacts> & { headers?: IncomingHttpHeaders } = {}): RequestFacts => ({
  method: 'GET',
  url: '/v2/accounts/42',
  httpVersionMinor: 1,
  instanceError: undefined,
  arrivedAt: ARRIVED,
  ...o,
  headers: { host: 'sluice', ...o.headers },
})

/** An admission as plain data: what a test compares whole. */
function shape(a: Admission): Record<string, unknown> {
  if (a.ok) return { ok: true, endpoint: a.endpoint.id, path: a.path, query: a.query, waitMs: a.deadline - ARRIVED }
  const e = a.error as Error & { statusCode?: number; code?: string; outcome?: string }
  return {
    ok: false,
    afterIdentity: a.afterIdentity,
    endpoint: a.endpoint?.id,
    error: { statusCode: e.statusCode, code: e.code, message: e.message, outcome: e.outcome },
  }
}

const admitted = (endpoint: string, path: string, query = '', waitMs = 60_000) => ({
  ok: true,
  endpoint,
  path,
  query,
  waitMs,
})
const refusal = (
  statusCode: number,
  code: string,
  message: string,
  o: { afterIdentity?: boolean; endpoint?: string; outcome?: string } = {},
) => ({
  ok: false,
  afterIdentity: o.afterIdentity ?? false,
  endpoint: o.endpoint,
  error: { statusCode, code, message, outcome: o.outcome ?? 'bad_request' },
})

describe('admit()', () => {
  const cases: [string, RequestFacts, Record<string, unknown>][] = [
    ['a plain GET', facts(), admitted('GET /accounts/{id}', '/accounts/42')],
    [
      'the query as sent',
      facts({ url: '/v2/accounts/42?fields=a,b' }),
      admitted('GET /accounts/{id}', '/accounts/42', '?fields=a,b'),
    ],
    [
      'the prefix in any letter case, doubled leading slashes',
      facts({ url: '//V2/accounts/42' }),
      admitted('GET /accounts/{id}', '/accounts/42'),
    ],
    [
      'HTTP/1.0 without Host',
      facts({ httpVersionMinor: 0, headers: { host: undefined } }),
      admitted('GET /accounts/{id}', '/accounts/42'),
    ],
    [
      'a shorter wait asked for',
      facts({ headers: { 'x-sluice-max-wait': '2.5' } }),
      admitted('GET /accounts/{id}', '/accounts/42', '', 2_500),
    ],
    [
      'a longer wait than the maximum: the maximum',
      facts({ headers: { 'x-sluice-max-wait': '3600' } }),
      admitted('GET /accounts/{id}', '/accounts/42'),
    ],
    [
      'a GET with Content-Length: 0',
      facts({ headers: { 'content-length': '0' } }),
      admitted('GET /accounts/{id}', '/accounts/42'),
    ],
    [
      'a POST with a body',
      facts({ method: 'POST', url: '/v2/accounts/search', headers: { 'content-length': '12' } }),
      admitted('POST /accounts/search', '/accounts/search'),
    ],
    [
      'a target over client.maxUrlBytes',
      facts({ url: '/v2/accounts/' + '4'.repeat(300) }),
      refusal(414, 'SLUICE_URL_TOO_LONG', 'The request target is longer than 256 bytes'),
    ],
    [
      'HTTP/1.1 without Host',
      facts({ headers: { host: undefined } }),
      refusal(400, 'SLUICE_BAD_REQUEST', 'An HTTP/1.1 request needs a Host header'),
    ],
    [
      'a path outside the prefix',
      facts({ url: '/v3/accounts' }),
      refusal(404, 'SLUICE_NOT_FOUND', 'sluice proxies the API under /v2; /v3/accounts is not below it'),
    ],
    [
      'an API v1 path once v1 is retired',
      facts({ url: '/v1/accounts' }),
      refusal(410, 'SLUICE_API_V1_RETIRED', 'API v1 was retired on 2026-07-11; move to API v2', {
        outcome: 'rejected_version',
      }),
    ],
    [
      'a .. segment',
      facts({ url: '/v2/accounts/../donations' }),
      refusal(400, 'SLUICE_BAD_PATH_TRAVERSAL', '"." and ".." segments are not allowed: "/accounts/../donations"'),
    ],
    [
      'a # in the query: refused as unmatched, like a bad path',
      facts({ url: '/v2/accounts/42?a=#b' }),
      refusal(
        400,
        'SLUICE_BAD_PATH',
        'The query holds a "#" at offset 3: a fragment is never sent to a server (percent-encode a "#" that is data as %23)',
      ),
    ],
    [
      'an instance that could not be read: the endpoint is named',
      facts({ instanceError: new BadInstanceError('the x-sluice-instance header') }),
      refusal(
        400,
        'SLUICE_BAD_INSTANCE',
        'The instance (organisation id) from the x-sluice-instance header must be 1-128 printable characters',
        { endpoint: 'GET /accounts/{id}' },
      ),
    ],
    [
      'a method override: after identity',
      facts({ method: 'POST', url: '/v2/accounts/search', headers: { 'x-http-method-override': 'DELETE' } }),
      refusal(
        400,
        'SLUICE_METHOD_OVERRIDE',
        'The x-http-method-override header is refused: sluice limits each request by its method; send the request with the method it means',
        {
          afterIdentity: true,
          endpoint: 'POST /accounts/search',
        },
      ),
    ],
    [
      'a GET with a body: after identity',
      facts({ headers: { 'content-length': '5' } }),
      refusal(
        400,
        'SLUICE_BODY_NOT_ALLOWED',
        'A GET request must not carry a body (Content-Length above 0 or Transfer-Encoding); send it without one',
        {
          afterIdentity: true,
          endpoint: 'GET /accounts/{id}',
        },
      ),
    ],
    [
      "a HEAD with Transfer-Encoding (its limit is the GET's): after identity",
      facts({ method: 'HEAD', headers: { 'transfer-encoding': 'chunked' } }),
      refusal(
        400,
        'SLUICE_BODY_NOT_ALLOWED',
        'A HEAD request must not carry a body (Content-Length above 0 or Transfer-Encoding); send it without one',
        {
          afterIdentity: true,
          endpoint: 'GET /accounts/{id}',
        },
      ),
    ],
    [
      'a wait header that is no number: after identity',
      facts({ headers: { 'x-sluice-max-wait': 'soon' } }),
      refusal(
        400,
        'SLUICE_BAD_MAX_WAIT',
        'The x-sluice-max-wait header must be a number of seconds, 0 or more (longer than the configured maximum wait counts as the maximum)',
        {
          afterIdentity: true,
          endpoint: 'GET /accounts/{id}',
        },
      ),
    ],
    [
      'the target before the shape: an unreadable instance wins over a method override',
      facts({ instanceError: new BadInstanceError('the Basic-auth username'), headers: { 'x-http-method': 'PUT' } }),
      refusal(
        400,
        'SLUICE_BAD_INSTANCE',
        'The instance (organisation id) from the Basic-auth username must be 1-128 printable characters',
        { endpoint: 'GET /accounts/{id}' },
      ),
    ],
  ]
  it.each(cases)('%s', (_name, request, expected) => {
    expect(shape(admit(request, rules))).toEqual(expected)
  })

  it('an API v1 path before v1 is retired: 404 like any path outside the prefix', () => {
    expect(shape(admit(facts({ url: '/v1/accounts' }), rulesBeforeV1Retired))).toEqual(
      refusal(404, 'SLUICE_NOT_FOUND', 'sluice proxies the API under /v2; /v1/accounts is not below it'),
    )
  })

  it('is pure: the same facts, the same answer, and the facts untouched', () => {
    const request = facts({ headers: { 'x-sluice-max-wait': '1' } })
    const before = JSON.stringify(request)
    expect(shape(admit(request, rules))).toEqual(shape(admit(request, rules)))
    expect(JSON.stringify(request)).toBe(before)
  })
})
