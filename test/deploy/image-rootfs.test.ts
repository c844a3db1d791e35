import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { REPO } from './chart.js'
import { freePort } from '../support/process.js'

/**
 * The runtime image's root, made by the Dockerfile's rootfs stage (scripts/image-rootfs.sh) from
 * this machine's node instead of the base image's (no registry here), with /app laid out as the
 * runtime stage copies it; sluice is then started in a chroot of it, as the image would run: no
 * shell, no npm, only node and the libraries `ldd` names. Needs root (chroot, a private mount
 * namespace for /proc and node_modules) and glibc's ldd; skipped, saying so, elsewhere.
 */

const isRoot = process.getuid?.() === 0
const hasTools = ['ldd', 'unshare', 'chroot'].every((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status === 0)
const node = realpathSync(process.execPath)

const listed = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => !e.isDirectory())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort()

describe.skipIf(!isRoot || !hasTools)(
  'the runtime image root (scripts/image-rootfs.sh) in a chroot (skipped unless root with ldd, unshare and chroot)',
  () => {
    const root = mkdtempSync(join(tmpdir(), 'sluice-rootfs-'))
    const cleanups: (() => void)[] = [() => rmSync(root, { recursive: true, force: true })]
    afterAll(() => cleanups.reverse().forEach((c) => c()))

    it('holds node and its libraries only, and runs sluice without a shell', async () => {
      chmodSync(root, 0o755) // an image's / is world-readable; mkdtemp's 0700 would shut user 1000 out
      const made = spawnSync(join(REPO, 'scripts/image-rootfs.sh'), [root, node], { encoding: 'utf8' })
      expect(made.status, made.stderr).toBe(0)
      const files = listed(root)
      expect(files).toContain('usr/local/bin/node')
      for (const f of files)
        expect(f, 'only node, shared libraries and nsswitch.conf').toMatch(
          /^(usr\/local\/bin\/node|lib(64)?\/.*\.so(\.[0-9]+)*|etc\/nsswitch\.conf)$/,
        )
      expect(files.some((f) => /(^|\/)(sh|bash|dash|npm|npx|corepack)$/.test(f))).toBe(false)

      // /app as the runtime stage copies it; node_modules is bind-mounted (the repo's, a superset of the production ones)
      const app = join(root, 'app')
      mkdirSync(join(app, 'node_modules'), { recursive: true })
      mkdirSync(join(root, 'proc'))
      cpSync(join(REPO, 'package.json'), join(app, 'package.json'))
      cpSync(join(REPO, 'dist'), join(app, 'dist'), { recursive: true })
      cpSync(join(REPO, 'config'), join(app, 'config'), { recursive: true })

      const seen: string[] = []
      const upstream: Server = createServer((req, res) => {
        seen.push(`${req.method} ${req.url}`)
        res.setHeader('content-type', 'application/json')
        res.end('{"accountId":"1"}')
      })
      upstream.listen(0, '127.0.0.1')
      await once(upstream, 'listening')
      cleanups.push(() => upstream.close())
      const [port, adminPort] = [await freePort(), await freePort()]
      const env = {
        NODE_ENV: 'production',
        SLUICE_HOST: '127.0.0.1',
        SLUICE_ADMIN_HOST: '127.0.0.1',
        SLUICE_PORT: String(port),
        SLUICE_ADMIN_PORT: String(adminPort),
        SLUICE_UPSTREAM: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v2`,
      }
      const modules = realpathSync(join(REPO, 'node_modules'))
      // The mounts live in the child's own mount namespace and end with it. chroot's --userspec is the image's USER.
      // PATH is the image's inside the chroot, this machine's for the tools that set it up.
      const script = `c=$(command -v chroot) && mount --bind "$1" "$2/app/node_modules" && mount -t proc proc "$2/proc" && cd "$2" && PATH=/usr/local/bin exec "$c" --userspec=1000:1000 "$2" /usr/local/bin/node -e "process.chdir('/app'); import('/app/dist/main.js')"`
      const child = spawn('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script, 'sh', modules, root], {
        env: { ...env, PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      cleanups.push(() => child.kill('SIGKILL'))
      let out = ''
      child.stderr.on('data', (d: Buffer) => (out += d.toString()))
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString()
          if (out.includes('"sluice listening"')) resolve()
        })
        child.once('exit', (code) => reject(new Error(`exited with ${code} before listening:\n${out}`)))
        child.once('error', reject)
      })

      expect((await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status).toBe(200)
      const res = await fetch(`http://127.0.0.1:${port}/v2/accounts/1`, {
        headers: { authorization: `Basic ${Buffer.from('org1:key').toString('base64')}` },
      })
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ accountId: '1' })
      expect(seen).toEqual(['GET /v2/accounts/1'])
      // and there is no shell to exec into
      expect(spawnSync('chroot', [root, '/bin/sh', '-c', 'true']).status).not.toBe(0)

      child.kill('SIGTERM')
      const [code] = (await once(child, 'exit')) as [number | null]
      expect(code, out).toBe(0)
    }, 60_000)
  },
)
