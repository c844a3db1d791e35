import { describe, expect, it } from 'vitest'
import { hasRateFields, readRateEvidence } from '../../../src/limiter/rate/answer-fields.js'

const NOW = Date.parse('2026-11-26T12:00:00Z')

describe('what an answer says about a rate', () => {
  it('answers without rate fields are not read (a 200 with a Retry-After either)', () => {
    expect(hasRateFields({ 'content-type': 'application/json' }, false)).toBe(false)
    expect(hasRateFields({ 'retry-after': '5' }, false)).toBe(false)
    expect(hasRateFields({ 'retry-after': '5' }, true)).toBe(true)
  })

  it('RateLimit-Policy: the strictest spacing of several policies; other quota units left out', () => {
    expect(readRateEvidence({ 'ratelimit-policy': '"burst";q=100;w=10, "day";q=5000;w=86400' }, false, NOW)).toEqual({
      rate: { requests: 5000, windowMs: 86_400_000, burst: 1 },
    })
    expect(
      readRateEvidence(
        { 'ratelimit-policy': '"default";q=100;w=10, "bytes";q=10;w=10;qu="content-bytes"' },
        false,
        NOW,
      ),
    ).toEqual({ rate: { requests: 100, windowMs: 10_000, burst: 100 } })
    expect(readRateEvidence({ 'ratelimit-policy': '"broken";q=x;w=10' }, false, NOW)).toEqual({})
  })

  it('RateLimit: what the window has counted; r=0 is a spent quota held for t seconds', () => {
    expect(
      readRateEvidence({ 'ratelimit-policy': '"default";q=100;w=10', ratelimit: '"default";r=40;t=3' }, false, NOW),
    ).toEqual({
      rate: { requests: 100, windowMs: 10_000, burst: 100 },
      used: 60,
    })
    expect(readRateEvidence({ ratelimit: '"default";r=0;t=7' }, true, NOW)).toEqual({ holdMs: 7000, quotaSpent: true })
  })

  it('X-RateLimit-Remaining: 0 with a reset in seconds, or as an epoch second', () => {
    expect(readRateEvidence({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '12' }, false, NOW)).toEqual({
      holdMs: 12_000,
      quotaSpent: true,
    })
    expect(
      readRateEvidence({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(NOW / 1000 + 30) }, false, NOW),
    ).toEqual({ holdMs: 30_000, quotaSpent: true })
    expect(readRateEvidence({ 'x-ratelimit-remaining': '3', 'x-ratelimit-reset': '12' }, false, NOW)).toEqual({})
  })

  it('X-RateLimit-Limit: the quota, a window at least as long as the reset, what the window counted', () => {
    const x = { 'x-ratelimit-limit': '20', 'x-ratelimit-remaining': '5', 'x-ratelimit-reset': '2' }
    expect(readRateEvidence(x, false, NOW)).toEqual({
      rate: { requests: 20, windowMs: 2000, burst: 20 },
      used: 15,
      windowFromReset: true,
    })
  })

  it("a throttled answer's Retry-After, in seconds or as a date, holds; the longest hold wins", () => {
    expect(readRateEvidence({ 'retry-after': '4' }, true, NOW)).toEqual({ holdMs: 4000 })
    expect(readRateEvidence({ 'retry-after': new Date(NOW + 9000).toUTCString() }, true, NOW)).toEqual({ holdMs: 9000 })
    expect(readRateEvidence({ 'retry-after': '4', ratelimit: '"d";r=0;t=6' }, true, NOW)).toEqual({
      holdMs: 6000,
      quotaSpent: true,
    })
    expect(readRateEvidence({ 'retry-after': 'soon' }, true, NOW)).toEqual({})
  })
})
