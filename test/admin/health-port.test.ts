import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { loadSettings } from '../../src/config/load.js'
import { describeStartFailure } from '../../src/start-failure.js'
import { startProxy, type RunningProxy } from '../support/proxy.js'

// healthPort: /healthz and /readyz alone on a port of their own, which a kubelet can reach while the
// admin port stays on loopback (the chart's sidecar; docs/configuration.md, `healthPort`).

const TOKEN = 'admin-token-0123456789abcdef'

let proxy: RunningProxy | undefined
afterEach(async () => {
  await proxy?.close()
  proxy = undefined
})

const healthUrl = (p: RunningProxy): string => {
  const address = p.app.health!.server.address() as AddressInfo
  return `http://127.0.0.1:${address.port}`
}

describe('the health port', () => {
  it('answers the probes as the admin port does, and nothing else', async () => {
    proxy = await startProxy({ healthPort: 0, healthHost: '127.0.0.1' })
    const health = healthUrl(proxy)
    expect(health).not.toBe(proxy.adminUrl)
    for (const path of ['/healthz', '/readyz']) {
      const [viaHealth, viaAdmin] = await Promise.all([fetch(health + path), fetch(proxy.adminUrl + path)])
      expect(viaHealth.status, path).toBe(200)
      expect(await viaHealth.json(), path).toEqual(await viaAdmin.json())
    }
    for (const path of ['/metrics', '/status', '/', '/status.html']) {
      const refused = await fetch(health + path)
      expect(refused.status, path).toBe(404)
      expect(await refused.json(), path).toEqual([
        { code: 'SLUICE_NOT_FOUND', message: `There is no ${path}; there are /healthz, /readyz` },
      ])
      expect((await fetch(proxy.adminUrl + path)).status, path).toBe(200)
    }
    await proxy.close()
    proxy = await startProxy({})
    expect(proxy.app.health).toBeUndefined() // none unless healthPort is set
  })

  it('asks for the admin token on the probes only with adminTokenHealth, as the admin port does', async () => {
    proxy = await startProxy({ healthPort: 0, healthHost: '127.0.0.1', adminToken: TOKEN, adminTokenHealth: true })
    expect((await fetch(`${healthUrl(proxy)}/readyz`)).status).toBe(401)
    expect((await fetch(`${healthUrl(proxy)}/readyz`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(
      200,
    )
    expect((await fetch(`${healthUrl(proxy)}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(
      404,
    )
  })

  it('a port in use stops the start with one line naming healthHost and healthPort', async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as AddressInfo).port
    const settings = loadSettings(
      {},
      { host: '127.0.0.1', adminHost: '127.0.0.1', port: 0, adminPort: 0, healthHost: '127.0.0.1', healthPort: port },
    )
    const app = await buildApp(settings, {})
    try {
      const failure = await app.listen().then(
        () => undefined,
        (err: unknown) => err,
      )
      expect(describeStartFailure(failure, settings)).toBe(
        `the health port cannot listen on 127.0.0.1:${port} (healthHost from the default, healthPort from the default): the port is in use by another process`,
      )
    } finally {
      await app.close()
      taken.close()
    }
  })
})
