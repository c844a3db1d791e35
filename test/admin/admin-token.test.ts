import { copyFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { startProxy, type RunningProxy } from '../support/proxy.js'

const TOKEN = 'admin-token-0123456789abcdef'
const ROOT = fileURLToPath(new URL('../..', import.meta.url))

let proxy: RunningProxy | undefined
afterEach(async () => {
  await proxy?.close()
  proxy = undefined
})

const get = (path: string, authorization?: string): Promise<Response> =>
  fetch(proxy!.adminUrl + path, { headers: authorization === undefined ? {} : { authorization } })
const basicWith = (password: string): string => `Basic ${Buffer.from(`ops:${password}`).toString('base64')}`

describe('the admin token', () => {
  it('guards /status, the page and /metrics; the probes stay open for the kubelet', async () => {
    proxy = await startProxy({ adminToken: TOKEN })
    for (const path of ['/status', '/', '/status.html', '/metrics']) {
      const refused = await get(path)
      expect(refused.status).toBe(401)
      expect(refused.headers.get('www-authenticate')).toBe(
        'Bearer realm="sluice admin", Basic realm="sluice admin", charset="UTF-8"',
      )
      expect(await refused.json()).toEqual([
        {
          code: 'SLUICE_ADMIN_UNAUTHORIZED',
          message:
            'This admin path needs the admin token: Authorization: Bearer <adminToken> (or Basic with the token as the password)',
        },
      ])
      expect((await get(path, `Bearer ${TOKEN}x`)).status).toBe(401)
      expect((await get(path, basicWith('wrong'))).status).toBe(401)
      expect((await get(path, `Bearer ${TOKEN}`)).status).toBe(200)
      // a browser asked for Basic credentials sends the token as the password, on the page's fetches too
      expect((await get(path, basicWith(TOKEN))).status).toBe(200)
    }
    expect((await get('/healthz')).status).toBe(200)
    expect((await get('/readyz')).status).toBe(200)
    expect(JSON.stringify(proxy.logs)).not.toContain(TOKEN)
  })

  it('with adminTokenHealth the probes need it too', async () => {
    proxy = await startProxy({ adminToken: TOKEN, adminTokenHealth: true })
    expect((await get('/healthz')).status).toBe(401)
    expect((await get('/readyz')).status).toBe(401)
    expect((await get('/healthz', `Bearer ${TOKEN}`)).status).toBe(200)
  })

  it('without a token everything is open, as before', async () => {
    proxy = await startProxy({})
    for (const path of ['/status', '/', '/metrics', '/healthz', '/readyz']) expect((await get(path)).status).toBe(200)
  })
})

describe('/status shows nothing a neighbour on the network should not see', () => {
  it('no file path: the calendar is "built-in" or its file name', async () => {
    proxy = await startProxy({})
    const builtIn = await (await get('/status')).text()
    expect(builtIn).not.toContain(ROOT)
    expect((JSON.parse(builtIn) as { versioning: { calendar: string } }).versioning.calendar).toBe('built-in')
    await proxy.close()

    const dir = mkdtempSync(join(tmpdir(), 'sluice-calendar-'))
    const file = join(dir, 'our-calendar.yaml')
    copyFileSync(join(ROOT, 'config/versions.yaml'), file)
    proxy = await startProxy({ versions: { calendarFile: file } })
    const custom = await (await get('/status')).text()
    expect(custom).not.toContain(dir)
    expect(custom).not.toContain(ROOT)
    expect((JSON.parse(custom) as { versioning: { calendar: string } }).versioning.calendar).toBe('our-calendar.yaml')
  })
})
