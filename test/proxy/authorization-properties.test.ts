import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { instanceOf } from '../../src/proxy/instance.js'
import { basicAuth } from '../support/sim.js'

// Property tests of the Authorization parser (README "Endpoints and limits": the instance is the
// Basic-auth username; only the username is read, the key is never kept).

const HEADER = 'x-sluice-instance'
const orgId = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._@-]{0,40}$/)
const apiKey = fc.string({ minLength: 1, maxLength: 64 })

describe('the Authorization parser: properties', () => {
  it('Basic base64(org:key) names the org, whatever the key (colons included) and the scheme letter case', () => {
    fc.assert(
      fc.property(orgId, apiKey, fc.constantFrom('Basic', 'basic', 'BASIC'), (org, key, scheme) => {
        expect(instanceOf({ authorization: basicAuth(org, key).replace('Basic', scheme) }, HEADER)).toBe(org)
      }),
      { numRuns: 3_000 },
    )
  })

  it('any header value: an instance of 1-128 printable characters, or a 400 with a SLUICE_ code — never another error', () => {
    const value = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.string({ maxLength: 100 }).map((s) => `Basic ${s}`),
      fc.string({ unit: 'binary', maxLength: 100 }).map((s) => `Basic ${Buffer.from(s).toString('base64')}`),
    )
    fc.assert(
      fc.property(
        value,
        fc.option(fc.string({ unit: 'binary', maxLength: 150 }), { nil: undefined }),
        (authorization, fallback) => {
          const headers = fallback === undefined ? { authorization } : { authorization, [HEADER]: fallback }
          let instance: string
          try {
            instance = instanceOf(headers, HEADER)
          } catch (err) {
            expect(err).toMatchObject({ statusCode: 400, code: expect.stringMatching(/^SLUICE_/) as string })
            return
          }
          expect(instance).toMatch(/^[^\p{Cc}\s]{1,128}$/u)
        },
      ),
      { numRuns: 2_000 },
    )
  })

  it('the API key never becomes part of the instance', () => {
    fc.assert(
      fc.property(orgId, fc.stringMatching(/^[A-Za-z0-9]{12,40}$/), (org, key) => {
        fc.pre(!org.includes(key))
        expect(instanceOf({ authorization: basicAuth(org, key) }, HEADER)).not.toContain(key)
      }),
      { numRuns: 2_000 },
    )
  })
})
