import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { isRetiredAsPublished } from '../../src/sim/index.js'
import { keyStats, withSim } from '../support/sim.js'

const day = (iso: string): Date => new Date(`${iso}T00:00:00Z`)

describe('the sim answers 410 for retired versions (§9)', () => {
  it('2.9 is retired on and after 2026-09-12, not on 2026-09-11', async () => {
    let today = day('2026-09-11')
    const sim = await withSim({ now: () => today })
    const get = async (version: string) => {
      const res = await request(`${sim.apiUrl}/volunteers`, { headers: { 'NEON-API-VERSION': version } })
      return { status: res.statusCode, body: await res.body.json() }
    }
    expect((await get('2.9')).status).toBe(200)
    today = new Date('2026-09-11T23:59:59.999Z')
    expect((await get('2.9')).status).toBe(200)
    today = day('2026-09-12')
    expect(await get('2.9')).toEqual({
      status: 410,
      body: [{ code: '410', message: 'API version 2.9 is retired and no longer valid' }],
    })
    today = day('2027-01-01')
    expect((await get('2.9')).status).toBe(410)
    expect((await get('2.10')).status).toBe(200)
    expect(keyStats(sim, 'default', 'GET /volunteers')).toMatchObject({ requests: 5, rejected410: 2, maxInProgress: 1 })
  })

  it('no version header, or a live one, passes', async () => {
    const sim = await withSim({ now: () => day('2030-01-01') })
    expect((await request(`${sim.apiUrl}/webhooks`)).statusCode).toBe(200)
    expect((await request(`${sim.apiUrl}/webhooks`, { headers: { 'neon-api-version': '2.12' } })).statusCode).toBe(200)
  })

  it('a 410 does not take a place under the limit', async () => {
    const sim = await withSim({ now: () => day('2026-10-01') })
    const res = await request(`${sim.apiUrl}/accounts/search`, {
      method: 'POST',
      headers: { 'neon-api-version': '2.8' },
    })
    expect(res.statusCode).toBe(410)
    await res.body.dump()
    expect(keyStats(sim, 'default', 'POST /accounts/search')).toMatchObject({
      inProgress: 0,
      maxInProgress: 0,
      rejected410: 1,
    })
  })

  it('the rule can be replaced with isRetired(version, now)', async () => {
    const seen: string[] = []
    const sim = await withSim({
      isRetired: (version, now) => {
        seen.push(`${version}@${now.toISOString().slice(0, 10)}`)
        return version === '2.12'
      },
      now: () => day('2026-01-02'),
    })
    expect((await request(`${sim.apiUrl}/webhooks`, { headers: { 'neon-api-version': '2.12' } })).statusCode).toBe(410)
    expect((await request(`${sim.apiUrl}/webhooks`, { headers: { 'neon-api-version': '2.1' } })).statusCode).toBe(200)
    expect(seen).toEqual(['2.12@2026-01-02', '2.1@2026-01-02'])
  })

  it.each([
    ['2.1', '2022-05-14', true],
    ['2.1', '2022-05-13', false],
    ['2.3', '2023-07-08', true],
    ['2.4', '2024-01-20', true],
    ['2.4', '2024-01-19', false],
    ['2.7', '2024-12-14', true],
    ['2.8', '2025-10-18', true],
    ['2.8', '2025-10-17', false],
    ['2.09', '2026-09-12', true], // read as 2.9
    ['2.5', '2099-01-01', false], // no retirement date published
    ['2.10', '2099-01-01', false],
    ['2.12', '2099-01-01', false],
    ['abc', '2099-01-01', false],
    ['2.9.1', '2099-01-01', false],
  ])('the published table: %s on %s → retired %s', (version, iso, retired) => {
    expect(isRetiredAsPublished(version, day(iso))).toBe(retired)
  })
})
