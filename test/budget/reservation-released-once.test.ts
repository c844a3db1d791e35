import { describe, expect, it } from 'vitest'
import { MemoryBudget } from '../../src/budget/budget.js'

describe('a reservation of the memory budget: bytes held while they fit, given back exactly once', () => {
  it('refuses what does not fit, counts the refusal, and releases once however often it is called', () => {
    const budget = new MemoryBudget(100)
    const a = budget.reserve('request', 60)!
    expect(budget.reserve('body', 50)).toBeUndefined()
    expect(budget.refusals('body')).toBe(1)
    const b = budget.reserve('body', 40)!
    expect(budget.inUse).toBe(100)
    expect(b.grow(1)).toBe(false)
    expect(budget.refusals('body')).toBe(2)

    a.release()
    a.release()
    expect(budget.inUse).toBe(40)
    expect(budget.held('request')).toBe(0)
    expect(a.grow(10)).toBe(false) // a released reservation holds nothing again
    expect(budget.inUse).toBe(40)
    b.release()
    expect(budget.inUse).toBe(0)
  })

  it('set counts bytes already in memory even past the budget, and says so', () => {
    const budget = new MemoryBudget(100)
    const answer = budget.reserve('answer', 0)!
    expect(answer.set(80)).toBe(true)
    expect(answer.set(120)).toBe(false)
    expect(budget.held('answer')).toBe(120)
    expect(budget.reserve('request', 1)).toBeUndefined()
    expect(answer.set(0)).toBe(true)
    answer.release()
    expect(budget.inUse).toBe(0)
  })
})
