import { describe, expect, it } from 'vitest'
import { send } from '../support/http.js'
import { useSimAndProxy } from '../support/proxy.js'

const b64 = (text: string): string => Buffer.from(text).toString('base64')

describe('the Authorization header: Basic base64("orgId:apiKey"), or none at all', () => {
  const stack = useSimAndProxy()

  it.each([
    [
      'Basic ',
      'SLUICE_EMPTY_AUTHORIZATION',
      'The Authorization header is empty; send Basic base64("orgId:apiKey"), or leave the header out',
    ],
    [
      '',
      'SLUICE_EMPTY_AUTHORIZATION',
      'The Authorization header is empty; send Basic base64("orgId:apiKey"), or leave the header out',
    ],
    [
      'Bearer x',
      'SLUICE_UNSUPPORTED_AUTHORIZATION',
      'The Authorization header is not Basic; the API takes Basic base64("orgId:apiKey")',
    ],
    [
      'Digest username="org1"',
      'SLUICE_UNSUPPORTED_AUTHORIZATION',
      'The Authorization header is not Basic; the API takes Basic base64("orgId:apiKey")',
    ],
    [
      `Basic ${b64(':key')}`,
      'SLUICE_BAD_INSTANCE',
      'The instance (organisation id) from the Basic-auth username must be 1-128 printable characters',
    ],
    [
      `Basic ${b64('no-colon')}`,
      'SLUICE_BAD_AUTHORIZATION',
      'The Authorization header is Basic but not base64("orgId:apiKey")',
    ],
  ])('%j is 400 %s, never the instance "default", and never reaches the API', async (authorization, code, message) => {
    const before = structuredClone(stack.sim.stats().keys)
    const answer = await send(stack.proxy.url, '/v2/campaigns', {
      headers: { authorization, 'x-sluice-instance': 'org-h' },
    })
    expect(answer.status).toBe(400)
    expect(answer.json()).toEqual([{ code, message }])
    expect(stack.sim.stats().keys).toEqual(before)
  })

  it('Basic with an orgId is that instance, in any letter case of the scheme; no header at all is the instance header or "default"', async () => {
    for (const authorization of [`Basic ${b64('org1:k')}`, `basic ${b64('org1:k')}`, `BASIC  ${b64('org1:k')} `]) {
      expect((await send(stack.proxy.url, '/v2/campaigns', { headers: { authorization } })).status).toBe(200)
    }
    expect((await send(stack.proxy.url, '/v2/campaigns')).status).toBe(200)
    const instances = stack.proxy.logs.filter((l) => l.msg === 'request' && l.status === 200).map((l) => l.instance)
    expect(instances).toEqual(['org1', 'org1', 'org1', 'default'])
  })
})
