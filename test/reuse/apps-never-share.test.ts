import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { send } from '../support/http.js'
import { startProxy } from '../support/proxy.js'
import { echoUpstream, sendWhileHeld, type Echo } from './echo-upstream.js'
import { COUNTRIES, COUNTRIES_ID } from './support.js'
import { tokenHash } from '../support/apps.js'

// With app identity on, an app is a principal: its token proves it, and with keys injected every
// app of an organisation sends the API the same credential. Requests of different apps never share
// a call or a cache entry; one app's identical requests still do (docs/reuse.md).

const TOKEN_WEB = 'token-web-5b1c9e0f7a3d'
const TOKEN_BATCH = 'token-batch-2e8d4a6c1f09'

describe('apps of one organisation with app identity on and keys injected', () => {
  it("two apps never share a call or a cache entry; one app's identical requests share both", async () => {
    const upstream = await echoUpstream()
    const keysDir = mkdtempSync(join(tmpdir(), 'sluice-keys-'))
    onTestFinished(() => rmSync(keysDir, { recursive: true, force: true }))
    writeFileSync(join(keysDir, '1001'), 'api-key-1001\n')
    const proxy = await startProxy({
      upstream: upstream.apiUrl,
      apps: {
        enabled: true,
        list: {
          web: { tokens: [tokenHash(TOKEN_WEB)], orgs: ['1001'] },
          batch: { tokens: [tokenHash(TOKEN_BATCH)], orgs: ['1001'] },
        },
      },
      credentials: { inject: true, keysDir },
      cache: { endpoints: [COUNTRIES_ID] },
    })
    onTestFinished(() => proxy.close())
    // the token in the token header, the organisation in the instance header: nothing else tells the apps apart
    const as = (token: string) => ({
      path: COUNTRIES,
      options: { headers: { 'x-sluice-app-token': token, 'x-sluice-instance': '1001' } },
    })

    // at once: web leads, batch makes its own call, a second web request follows web's
    const [web, batch, webAgain] = await sendWhileHeld(proxy, upstream, as(TOKEN_WEB), as(TOKEN_BATCH), as(TOKEN_WEB))
    expect([web, batch, webAgain].map((a) => a!.status)).toEqual([200, 200, 200])
    expect(upstream.seen).toHaveLength(2)
    expect(webAgain!.text).toBe(web!.text)
    expect(batch!.json<Echo>().call).not.toBe(web!.json<Echo>().call)
    // both calls carried the organisation's injected key, and no token
    for (const e of upstream.seen) {
      expect(e.headers.authorization).toBe('Basic ' + Buffer.from('1001:api-key-1001').toString('base64'))
      expect(e.headers['x-sluice-app-token']).toBeUndefined()
    }

    // later: each app is served its own cache entry
    const cached = await Promise.all([
      send(proxy.url, COUNTRIES, as(TOKEN_WEB).options),
      send(proxy.url, COUNTRIES, as(TOKEN_BATCH).options),
    ])
    expect(cached.map((a) => a.headers['x-sluice-cache'])).toEqual(['hit', 'hit'])
    expect(cached[0].json<Echo>().call).toBe(web!.json<Echo>().call)
    expect(cached[1].json<Echo>().call).toBe(batch!.json<Echo>().call)
    expect(upstream.seen).toHaveLength(2)
  })
})
