import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { dirname } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { MAIN_JS } from '../support/process.js'
import { REPO } from './chart.js'

/**
 * Review 8: `npm start` is now `NODE_OPTIONS=… exec node dist/main.js`, so node is npm's direct child.
 * A signal sent to the whole process group (Ctrl-C in a terminal; systemd's default
 * KillMode=control-group on `systemctl stop`) reaches node twice: once directly, once forwarded by npm
 * (@npmcli/run-script forwards SIGINT and SIGTERM to its child). src/main.ts installs its handlers with
 * `process.once`, so the second signal meets the default disposition and kills node mid-drain: the
 * in-flight request is cut and nothing says "shutting down". Before `exec`, `sh -c` stood between npm
 * and node and absorbed npm's forwarded signal, so node saw one.
 */

let upstream: Server | undefined
let child: ChildProcess | undefined
afterEach(async () => {
  if (child !== undefined && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      /* gone */
    }
  }
  child = undefined
  await new Promise((resolve) => (upstream ? upstream.close(resolve) : resolve(undefined)))
  upstream = undefined
})

/** An upstream that answers after `delayMs`: a request in flight while sluice is told to stop. */
async function slowUpstream(delayMs: number): Promise<number> {
  upstream = createServer((_req, res) =>
    setTimeout(() => {
      res.setHeader('content-type', 'application/json')
      res.end('{"ok":true}')
    }, delayMs),
  )
  await new Promise<void>((resolve) => upstream!.listen(0, '127.0.0.1', resolve))
  return (upstream.address() as { port: number }).port
}

/** Starts `file args` in its own process group (as a terminal or a systemd unit would); resolves once sluice listens. */
async function start(file: string, args: string[], upstreamPort: number): Promise<{ url: string; out: () => string }> {
  const proc = spawn(file, args, {
    cwd: REPO,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
      HOME: process.env.HOME ?? '/tmp',
      SLUICE_HOST: '127.0.0.1',
      SLUICE_ADMIN_HOST: '127.0.0.1',
      SLUICE_PORT: '0',
      SLUICE_ADMIN_PORT: '0',
      SLUICE_UPSTREAM: `http://127.0.0.1:${upstreamPort}/v2`,
      SLUICE_REQUEST_LOG: 'false',
    },
  })
  child = proc
  let out = ''
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()))
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`did not start:\n${out}`)), 20_000)
    proc.stdout.on('data', () => {
      const line = out.split('\n').find((l) => l.includes('"sluice listening"'))
      if (line === undefined) return
      clearTimeout(timer)
      resolve((JSON.parse(line) as { proxyUrl: string }).proxyUrl)
    })
    proc.once('exit', (code) => reject(new Error(`exited ${code} before listening:\n${out}`)))
  })
  return { url, out: () => out }
}

/** A request in flight through sluice, then `signal` to the whole process group; what the request got. */
async function stopMidRequest(file: string, args: string[], signal: NodeJS.Signals) {
  const { url, out } = await start(file, args, await slowUpstream(1_500))
  const answer = fetch(`${url}/v2/contacts`, {
    headers: { authorization: `Basic ${Buffer.from('1001:abc').toString('base64')}` },
  }).then(
    async (r) => ({ status: r.status, body: await r.text() }),
    (err: unknown) => ({ status: 0, body: String((err as Error).cause ?? err) }),
  )
  await new Promise((resolve) => setTimeout(resolve, 400)) // the request is at the upstream now
  const exited = once(child!, 'exit')
  process.kill(-child!.pid!, signal) // the terminal's Ctrl-C / systemd's control-group kill
  const got = await answer
  await exited
  return { got, said: out() }
}

describe('review 8: a signal to the process group under `npm start` drains, as under node', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)(
    '%s to npm start’s process group: the request in flight is answered',
    async (signal) => {
      const { got, said } = await stopMidRequest('npm', ['start'], signal)
      expect(said).toContain('"shutting down"')
      expect(got).toEqual({ status: 200, body: '{"ok":true}' })
    },
  )

  it('the same signal twice (a group signal plus npm forwarding it) does not cut the drain short', async () => {
    const { url } = await start(process.execPath, [MAIN_JS], await slowUpstream(1_500))
    const answer = fetch(`${url}/v2/contacts`, {
      headers: { authorization: `Basic ${Buffer.from('1001:abc').toString('base64')}` },
    }).then(
      (r) => r.status,
      () => 0,
    )
    await new Promise((resolve) => setTimeout(resolve, 400))
    const exited = once(child!, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
    child!.kill('SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 100))
    child!.kill('SIGTERM')
    expect(await answer).toBe(200)
    expect(await exited).toEqual([0, null])
  })
})
