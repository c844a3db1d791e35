import { describe, expect, it } from 'vitest'
import { answerOf, PLAIN, versioningAt } from './helpers.js'

const PREFIX = 'The NEON-API-VERSION header must hold one API version <major>.<minor> such as 2.12; '

describe('a version header that is not one <major>.<minor> is answered 400', () => {
  const { versioning } = versioningAt('2026-09-12T10:00:00Z')
  const cases: [string, string | string[], string][] = [
    ['empty', '', 'it is empty'],
    ['only blanks', '   ', 'it is empty'],
    ['a major alone', '2', 'got "2"'],
    ['three parts', '2.12.1', 'got "2.12.1"'],
    ['letters', 'abc', 'got "abc"'],
    ['a leading zero', '2.09', 'got "2.09"'],
    ['a prefix', 'v2.9', 'got "v2.9"'],
    ['a comma list (a repeated header, as Node joins it)', '2.9, 2.10', 'it holds several values'],
    ['several values as an array', ['2.9', '2.10'], 'it holds several values'],
    ['an empty array', [], 'it is empty'],
    ['over 16 characters', '22222222.22222222', 'it is 17 characters long (at most 16)'],
  ]

  for (const [name, value, problem] of cases) {
    it(name, () => {
      expect(answerOf(() => versioning.decide(value, PLAIN))).toEqual({
        code: 'SLUICE_BAD_VERSION_HEADER',
        statusCode: 400,
        message: PREFIX + problem,
      })
    })
  }

  it('exactly 16 characters is still read (and passed on as an unknown version)', () => {
    expect(versioning.decide('2222222.22222222', PLAIN)).toMatchObject({
      requested: '2222222.22222222',
      upstream: '2222222.22222222',
    })
  })

  it('blanks around a valid value and a one-element array are read as that value', () => {
    expect(versioning.decide(' 2.11 ', PLAIN)).toMatchObject({ requested: '2.11', upstream: '2.11' })
    expect(versioning.decide(['2.11'], PLAIN)).toMatchObject({ requested: '2.11', upstream: '2.11' })
  })

  it('names the configured header', () => {
    const { versioning: custom } = versioningAt('2026-09-12T10:00:00Z', { header: 'X-Api-Version' })
    expect(custom.headerName).toBe('x-api-version')
    expect(answerOf(() => custom.decide('abc', PLAIN)).message).toBe(
      'The X-Api-Version header must hold one API version <major>.<minor> such as 2.12; got "abc"',
    )
  })
})
