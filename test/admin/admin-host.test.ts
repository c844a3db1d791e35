import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send } from '../support/http.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'

// README "Admin port": without an admin token, /status, the status page, /metrics (and every other
// admin path but the probes) answer only under an IP address, localhost or a name in adminHostNames,
// so a web page cannot read them through DNS rebinding. Kubelet probes and Prometheus send the pod's
// IP; `helm test` asks /readyz by the Service's name. Through the real admin server.

let open: RunningProxy
let guarded: RunningProxy
const TOKEN = 'admin-token-0123456789abcdef'

beforeAll(async () => {
  open = await startProxy({ adminHostNames: ['sluice-admin.example.org'] })
  guarded = await startProxy({ adminToken: TOKEN })
})
afterAll(async () => {
  await open?.close()
  await guarded?.close()
})

const refusal = (host: string): unknown => [
  {
    code: 'SLUICE_ADMIN_HOST_REFUSED',
    message: `Without adminToken, the admin port answers this path only under an IP address, localhost or a name in adminHostNames (a defence against DNS rebinding); not under the Host ${JSON.stringify(host)}`,
  },
]

describe('the admin port under a DNS name it does not know', () => {
  it.each(['/status', '/metrics', '/', '/status.html', '/nothing-here'])(
    'without a token, %s under a rebinding name: 403 in the error shape',
    async (path) => {
      for (const host of [
        'attacker.example:9090',
        'attacker.example',
        'x.sluice-admin.example.org',
        '127.0.0.1.nip.io',
        'localhost.attacker.example',
      ]) {
        const answer = await send(open.adminUrl, path, { headers: { host } })
        expect({ host, status: answer.status, type: answer.headers['content-type'], body: answer.json() }).toEqual({
          host,
          status: 403,
          type: 'application/json; charset=utf-8',
          body: refusal(host),
        })
      }
    },
  )

  it('without a token, IP addresses (what probes and Prometheus send), localhost and the listed names are answered', async () => {
    for (const host of [
      '10.42.0.17:9090',
      '10.42.0.17',
      '127.0.0.1',
      '[fd00::17]:9090',
      '[::1]',
      'localhost:9090',
      'LOCALHOST',
      'status.localhost',
      'sluice-admin.example.org',
      'Sluice-Admin.Example.ORG.:443',
    ]) {
      for (const path of ['/status', '/metrics'])
        expect({ host, path, status: (await send(open.adminUrl, path, { headers: { host } })).status }).toEqual({
          host,
          path,
          status: 200,
        })
    }
  })

  it('the probes answer under any name (helm test asks the Service by name)', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const answer = await send(open.adminUrl, path, { headers: { host: 'sluice.crm.svc.cluster.local:9090' } })
      expect({ path, status: answer.status }).toEqual({ path, status: 200 })
    }
  })

  it('with a token, the token decides, whatever the name', async () => {
    const host = 'attacker.example:9090'
    expect(
      (await send(guarded.adminUrl, '/status', { headers: { host, authorization: `Bearer ${TOKEN}` } })).status,
    ).toBe(200)
    const without = await send(guarded.adminUrl, '/status', { headers: { host } })
    expect(without.status).toBe(401)
    expect(without.json<[{ code: string }]>()[0].code).toBe('SLUICE_ADMIN_UNAUTHORIZED')
  })
})
