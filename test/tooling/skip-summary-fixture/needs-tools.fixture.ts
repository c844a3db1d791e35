import { describe, expect, it } from 'vitest'
import { needs } from '../../support/tools.js'

describe.skip(`a page in a browser ${needs('chromium')}`, () => {
  it('one', () => expect(1).toBe(1))
  it('two', () => expect(1).toBe(1))
})

describe.skip(`the rules ${needs('promtool')}`, () => {
  it('checked', () => expect(1).toBe(1))
})

it.skip('skipped with no tool named', () => expect(1).toBe(1))

it('runs', () => expect(1).toBe(1))
