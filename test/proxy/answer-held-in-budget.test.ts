import { createServer } from 'node:http'
import { connect } from 'node:net'
import { describe, expect, it, onTestFinished } from 'vitest'
import { send, until } from '../support/http.js'
import { basic, startProxy } from '../support/proxy.js'
import { REQUEST_BYTES } from '../../src/proxy/memory-hold.js'

const BIG = Buffer.alloc(8 * 1024 * 1024, 'sluice ') // far more than the socket buffers between API, proxy and client hold
const BUDGET = 300_000

async function used(adminUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text()
  const figures: Record<string, number> = {}
  for (const m of text.matchAll(/^sluice_memory_budget_used_bytes\{kind="(\w+)"\} (\d+)$/gm))
    figures[m[1]!] = Number(m[2])
  return figures
}

describe('answer bytes held for a client that does not read count in the memory budget, and pause the API past it', () => {
  it('holds far less than client.answerBufferBytes (4 MiB) under a small budget, refuses new work meanwhile, gives it back when the client goes', async () => {
    const api = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(BIG.length) })
      res.end(BIG)
    })
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r))
    onTestFinished(() => new Promise<void>((r) => api.close(() => r())))
    const { port } = api.address() as { port: number }
    const proxy = await startProxy({
      upstream: `http://127.0.0.1:${port}/v2`,
      memory: { budgetBytes: BUDGET, maxShare: 1 },
    })
    try {
      const url = new URL(proxy.url)
      const deaf = connect(Number(url.port), url.hostname, () => {
        deaf.write(`GET /v2/campaigns HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('org-deaf')}\r\n\r\n`)
        deaf.pause() // and never reads
      })
      deaf.on('error', () => undefined)
      const closed = new Promise<void>((resolve) => deaf.once('close', () => resolve()))
      // the answer fills what the budget has left beside the request itself, then the API's answer pauses
      await until(
        async () => ((await used(proxy.adminUrl)).answer ?? 0) > BUDGET - REQUEST_BYTES,
        'the held answer to fill the budget',
      )
      expect((await used(proxy.adminUrl)).answer).toBeLessThan(1024 * 1024)

      const refused = await send(proxy.url, '/v2/campaigns', { headers: { authorization: basic('org-other') } })
      expect(refused.status).toBe(503)
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect(refused.json()).toMatchObject([{ code: 'SLUICE_MEMORY_BUDGET' }])

      deaf.destroy()
      await closed
      await until(
        async () => (await used(proxy.adminUrl)).answer === 0 && (await used(proxy.adminUrl)).request === 0,
        'the held answer given back',
      )
      const served = await send(proxy.url, '/v2/campaigns', { headers: { authorization: basic('org-other') } })
      expect(served.status).toBe(200)
      expect(served.text.length).toBe(BIG.length)
    } finally {
      await proxy.close()
    }
  }, 60_000)
})
