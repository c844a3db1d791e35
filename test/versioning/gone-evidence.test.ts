import { describe, expect, it } from 'vitest'
import { GoneAnswers, MAX_ANSWERS_KEPT } from '../../src/versioning/evidence.js'

const RULES = { minAnswers: 3, minInstances: 2, minEndpoints: 2, windowMs: 60_000 }

describe('the 410s kept as evidence of a retired version', () => {
  it('are bounded per version whatever one client sends, and the oldest go first', () => {
    const gone = new GoneAnswers(RULES)
    for (let i = 0; i < 10_000; i++)
      expect(gone.gone('2.10', { atMs: i, instance: 'org1', endpoint: 'PUT /accounts/{id}' })).toBeUndefined()
    expect(gone.count('2.10')).toBe(MAX_ANSWERS_KEPT)
  })

  it('are forgotten once they made a retirement, and on a success', () => {
    const gone = new GoneAnswers(RULES)
    gone.gone('2.10', { atMs: 0, instance: 'a', endpoint: 'x' })
    gone.gone('2.10', { atMs: 1, instance: 'b', endpoint: 'y' })
    expect(gone.gone('2.10', { atMs: 2, instance: 'a', endpoint: 'y' })).toEqual({
      answers: 3,
      instances: ['a', 'b'],
      endpoints: ['x', 'y'],
      firstAtMs: 0,
      lastAtMs: 2,
    })
    expect(gone.pending).toBe(false)
    gone.gone('2.11', { atMs: 3, instance: 'a', endpoint: 'x' })
    expect(gone.pending).toBe(true)
    gone.succeeded('2.11')
    expect(gone.count('2.11')).toBe(0)
    expect(gone.pending).toBe(false)
  })
})
