import { connect, type Socket } from 'node:net'
import { describe, expect, it, onTestFinished } from 'vitest'
import { REQUEST_BYTES } from '../../src/proxy/memory-hold.js'
import { tokenHash } from '../support/apps.js'
import { send, until } from '../support/http.js'
import { adminJson, startProxy, statusOf, type RunningProxy } from '../support/proxy.js'
import { basicAuth, keyStats, withSim } from '../support/sim.js'

/*
 * The memory budget has shares (docs/deploy.md, "Memory: a budget"): a body is charged as its bytes
 * arrive, so heads without bodies hold no body bytes, and one app (one organisation with app identity
 * off) holds at most `memory.maxShare` of the budget. The attacker and a victim side by side: the
 * victim is served.
 */

const MiB = 1024 * 1024
const SEARCH = 'POST /accounts/search' // limit 1

const metric = async (proxy: RunningProxy, line: string): Promise<number> => {
  const text = await (await fetch(`${proxy.adminUrl}/metrics`)).text()
  const found = text.split('\n').find((l) => l.startsWith(line + ' '))
  return found === undefined ? 0 : Number(found.slice(line.length + 1))
}

/** A POST head that declares `length` bytes of body and sends none, on a connection of its own; `heard` collects what comes back. */
function headWithoutBody(proxy: RunningProxy, authorization: string, length: number): Socket & { heard: string } {
  const url = new URL(proxy.url)
  const socket = Object.assign(connect(Number(url.port), url.hostname), { heard: '' })
  socket.on('error', () => undefined)
  socket.on('data', (chunk: Buffer) => (socket.heard += chunk.toString('utf8')))
  socket.write(
    `POST /v2/accounts/search HTTP/1.1\r\nHost: sluice\r\nAuthorization: ${authorization}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`,
  )
  onTestFinished(() => void socket.destroy())
  return socket
}

describe('shares of the memory budget', () => {
  it('16 POST heads with no body into a 16 MiB budget: the other app is served', async () => {
    const sim = await withSim()
    const BATCH = 'app-token-batch-head-attack-01'
    const WEB = 'app-token-web-victim-0002'
    const proxy = await startProxy({
      upstream: sim.apiUrl,
      memory: { budgetBytes: 16 * MiB },
      apps: {
        enabled: true,
        list: {
          batch: { tokens: [tokenHash(BATCH)], orgs: ['2002'] },
          web: { tokens: [tokenHash(WEB)], orgs: ['1001'] },
        },
      },
      fairness: { apps: { batch: { class: 'batch', maxQueued: 1, maxHeld: 1 } } },
    })
    onTestFinished(() => proxy.close())
    // each head declares what, with its request, is 1 MiB: 16 of them are the whole budget if held at their word
    for (let i = 0; i < 16; i++) headWithoutBody(proxy, basicAuth('2002', BATCH), MiB - REQUEST_BYTES)
    await until(
      async () => (await metric(proxy, 'sluice_memory_budget_used_bytes{kind="request"}')) === 16 * REQUEST_BYTES,
      'the 16 heads admitted',
    )
    const victim = await send(proxy.url, '/v2/accounts/42', { headers: { authorization: basicAuth('1001', WEB) } })
    expect(victim.status).toBe(200)
    expect(await metric(proxy, 'sluice_memory_budget_used_bytes{kind="body"}')).toBe(0)
    // /status shows each app's use of the budget
    const status = await adminJson<{ memory: { by: string; holders: Record<string, number> } }>(proxy, '/status')
    expect(status.memory).toMatchObject({ by: 'app', holders: { batch: 16 * REQUEST_BYTES } })
  })

  it('an organisation over its share is refused first; another keeps its share (app identity off)', async () => {
    const sim = await withSim()
    // four requests with their bodies are the whole budget; one organisation may hold two
    const body = '{"q":"' + 'x'.repeat(256 * 1024 - REQUEST_BYTES - 8) + '"}'
    const budgetBytes = 4 * (REQUEST_BYTES + Buffer.byteLength(body))
    const proxy = await startProxy({ upstream: sim.apiUrl, memory: { budgetBytes } }) // memory.maxShare: 0.5, the default
    onTestFinished(() => proxy.close())
    const search = (org: string, extra: Record<string, string> = {}, sent = body) =>
      send(proxy.url, '/v2/accounts/search', {
        method: 'POST',
        headers: { authorization: basicAuth(org), 'content-type': 'application/json', ...extra },
        body: sent,
      })
    const held = search('a1', { 'x-sim-hold': 'a' })
    await until(() => keyStats(sim, 'a1', SEARCH)?.inProgress === 1, "the attacker's first request upstream")
    const queued = search('a1')
    await until(async () => (await statusOf(proxy, 'a1', SEARCH))?.queued === 1, 'its second queued')
    // two more heads, each declaring a body as large: past its share, refused before a byte is read
    const over = [0, 1].map(() => headWithoutBody(proxy, basicAuth('a1'), Buffer.byteLength(body)))
    await until(
      async () =>
        (await metric(proxy, 'sluice_memory_budget_used_bytes{kind="request"}')) / REQUEST_BYTES +
          (await metric(proxy, 'sluice_memory_budget_refusals_total{kind="request"}')) ===
        4,
      'its third and fourth refused or admitted',
    )
    const victim = await search('v1')
    expect(victim.status).toBe(200)
    sim.open('a')
    expect((await Promise.all([held, queued])).map((a) => a.status)).toEqual([200, 200])
    await until(() => over.every((socket) => socket.heard.endsWith(']')), 'both refusals read')
    for (const socket of over) {
      expect(socket.heard).toMatch(/^HTTP\/1\.1 503 /)
      expect(socket.heard).toContain(
        `[{"code":"SLUICE_MEMORY_BUDGET","message":"this app's share of the memory budget (${budgetBytes / 2} bytes) is held in its requests and answers now; try again after Retry-After"}]`,
      )
    }
  })
})
