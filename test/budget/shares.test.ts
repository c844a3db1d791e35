import { describe, expect, it } from 'vitest'
import { MemoryBudget } from '../../src/budget/budget.js'

// One holder (an app; an organisation with app identity off) holds at most its share of the budget;
// the others keep theirs; a holder holding nothing has no entry (docs/deploy.md, "Memory: a budget").

describe('shares of the memory budget', () => {
  it('a holder past its share is refused while another still fits; growth and answers count alike', () => {
    const budget = new MemoryBudget(1000, 0.5)
    const a = budget.reserve('request', 400, 'a')!
    expect(budget.reserve('request', 200, 'a')).toBeUndefined()
    expect(budget.overShare('a', 200)).toBe(true)
    const b = budget.reserve('request', 500, 'b')!
    expect(b.bytes).toBe(500)
    // a body charged as it arrives: its holder's share bounds it too
    const body = budget.reserve('body', 0, 'a')!
    expect(body.grow(100)).toBe(true)
    expect(body.grow(1)).toBe(false)
    // answer bytes already in memory are counted, and say the holder is over
    const answer = budget.reserve('answer', 0, 'b')!
    expect(answer.set(10)).toBe(false)
    expect(budget.wouldFit('body', 1, 'a')).toBe(false)
    expect(budget.refusals('body')).toBe(2)
    expect(Object.fromEntries(budget.holders())).toEqual({ a: 500, b: 510 })
    for (const r of [a, b, body, answer]) r.release()
    expect(budget.holders().size).toBe(0)
    expect(budget.inUse).toBe(0)
  })

  it('maxShare 1 (or no holder) is the whole budget, as before shares', () => {
    const budget = new MemoryBudget(1000, 1)
    expect(budget.reserve('request', 1000, 'a')).toBeDefined()
    expect(budget.overShare('a', 1)).toBe(false)
    expect(new MemoryBudget(1000).reserve('request', 1000)).toBeDefined()
  })
})
