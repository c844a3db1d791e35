import { describe, expect, it } from 'vitest'
import { send, until } from '../support/http.js'
import { basic, useSimAndProxy } from '../support/proxy.js'
import { parsePromText, select } from './prom-text.js'

// sluice_app_permits_held through the real proxy: a permit counts for its app from the grant until
// the upstream is done (README "Apps: identity, access and keys", docs/observability.md).

const stack = useSimAndProxy({ latencyMs: 0 })

async function held(): Promise<Record<string, number>> {
  const text = await (await fetch(stack.proxy.adminUrl + '/metrics')).text()
  return Object.fromEntries(
    select(parsePromText(text), 'sluice_app_permits_held').map((s): [string, number] => [s.labels.app!, s.value]),
  )
}

const search = (app: string, delayMs: number) =>
  send(stack.proxy.url, '/v2/accounts/search', {
    method: 'POST',
    headers: {
      authorization: basic('1001'),
      'x-sluice-app': app,
      'content-type': 'application/json',
      'x-sim-delay-ms': String(delayMs),
    },
    body: '{}',
  })

describe('permits held per app', () => {
  it('counts the app holding the permit while its request is upstream, not the app waiting, and 0 once given back', async () => {
    // the upstream holds the first search for a while, so the permit is certainly held while the metrics are read
    const web = search('web', 3_000)
    await until(async () => (await held()).web === 1, 'web holding the permit')
    const batch = search('batch', 0) // waits behind web on the limit-1 key
    await until(
      async () =>
        (
          await fetch(stack.proxy.adminUrl + '/status').then((r) => r.json() as Promise<{ keys: { queued: number }[] }>)
        ).keys.some((k) => k.queued === 1),
      'batch queued',
    )
    expect((await held()).batch ?? 0).toBe(0)
    expect((await web).status).toBe(200)
    expect((await batch).status).toBe(200)
    await until(async () => {
      const now = await held()
      return now.web === 0 && (now.batch ?? 0) === 0
    }, 'both permits given back')
  })
})
