import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'

/** `dist/main.js`: `npm test` builds before it runs vitest, so child processes run the real build. */
export const MAIN_JS = fileURLToPath(new URL('../../dist/main.js', import.meta.url))

export interface ProxyProcess {
  readonly child: ChildProcess
  readonly url: string
  readonly adminUrl: string
  /** everything the process wrote to stdout/stderr so far */
  output(): string
  /** SIGTERM and wait for exit; resolves with the exit code */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/** Starts `node dist/main.js` with the given SLUICE_* env on free ports; resolves once it listens. */
export async function spawnProxy(env: Record<string, string>, timeoutMs = 15_000): Promise<ProxyProcess> {
  const child = spawn(process.execPath, [MAIN_JS], {
    env: { PATH: process.env.PATH ?? '', SLUICE_HOST: '127.0.0.1', SLUICE_ADMIN_HOST: '127.0.0.1', SLUICE_PORT: '0', SLUICE_ADMIN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const listening = await new Promise<{ proxyUrl: string; adminUrl: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`proxy did not start in ${timeoutMs} ms:\n${out}`)), timeoutMs)
    const onData = (): void => {
      const line = out.split('\n').find((l) => l.includes('"sluice listening"'))
      if (line === undefined) return
      clearTimeout(timer)
      child.stdout.off('data', onData)
      resolve(JSON.parse(line) as { proxyUrl: string; adminUrl: string })
    }
    child.stdout.on('data', onData)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`proxy exited with ${code} before listening:\n${out}`))
    })
  })
  return {
    child,
    url: listening.proxyUrl,
    adminUrl: listening.adminUrl,
    output: () => out,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
      child.kill(signal)
      const [code] = (await once(child, 'exit')) as [number | null]
      return code
    },
  }
}
