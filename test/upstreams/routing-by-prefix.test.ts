import { describe, expect, it } from 'vitest'
import { basicAuth, keyStats } from '../support/sim.js'
import { useTrialStack } from './trial-stack.js'
import { send } from '../support/http.js'

/*
 * A path goes to the upstream whose prefix it lies below, matched as the CRM's `/v2` is (letter case
 * ignored, doubled leading slashes tolerated); a path below no prefix is the CRM's 404.
 */

const stack = useTrialStack()

const search = (path: string) =>
  send(stack.proxy.url, path, { method: 'POST', headers: { authorization: basicAuth('1001') }, body: '{}' })

describe('routing by prefix', () => {
  it('another letter case and a doubled slash reach the trial host; the CRM never sees them', async () => {
    expect((await search('/Trial/V2/accounts/search')).status).toBe(200)
    expect((await search('//trial/v2/accounts/search')).status).toBe(200)
    expect(keyStats(stack.trial, '1001', 'POST /accounts/search')?.requests).toBe(2)
    expect(keyStats(stack.production, '1001', 'POST /accounts/search')).toBeUndefined()
  })

  it('a path that only starts like the prefix is below none: 404, and no upstream sees it', async () => {
    for (const path of ['/trialx/v2/accounts/search', '/trial/v22/accounts/search', '/trial']) {
      const answer = await search(path)
      expect(answer.status).toBe(404)
      expect(answer.json<{ code: string }[]>()[0]!.code).toBe('SLUICE_NOT_FOUND')
    }
    expect(keyStats(stack.trial, '1001', 'POST /accounts/search')?.requests).toBe(2)
    expect(stack.production.stats().keys).toEqual({})
  })
})
