import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { defaultSettings } from '../../src/config/load.js'
import { at, chartValues, REPO } from './chart.js'
import {
  copies,
  dockerignorePatterns,
  dockerIgnored,
  execForm,
  readDockerfile,
  stageKeyValues,
  targets,
  type Stage,
} from './dockerfile.js'

/** The Dockerfile read as text (no Docker engine here), and its runtime stage's layout started for real. */

const { stages } = readDockerfile()
const runtime = stages.at(-1)!
const stageNamed = (name: string | undefined): Stage => {
  const stage = stages.find((s) => s.name === name)
  if (!stage) throw new Error(`no stage named ${name}`)
  return stage
}
const ops = (stage: Stage, op: string): string[] => stage.instructions.filter((i) => i.op === op).map((i) => i.args)
const workdir = (stage: Stage): string => ops(stage, 'WORKDIR').at(-1) ?? '/'

describe('Dockerfile', () => {
  it("writes --build-arg REVISION where sluice_build_info reads it in the image (no .git there), and VERSION is package.json's", async () => {
    const { REVISION_FILE } = await import('../../src/metrics/build-info.js')
    const build = stageNamed('build')
    expect(ops(build, 'ARG')).toContain('REVISION=unknown')
    expect(ops(build, 'RUN').some((run) => run.includes(`"$REVISION" > ${REVISION_FILE}`))).toBe(true)
    expect(ops(runtime, 'ARG')).toContain(`VERSION=${String(at(chartValues(), ['image', 'tag']))}`)
  })

  it('runs `node dist/main.js` itself (exec form, no npm or shell in between, so SIGTERM reaches sluice)', () => {
    expect(ops(runtime, 'ENTRYPOINT')).toEqual([])
    const cmd = ops(runtime, 'CMD')
    expect(cmd).toHaveLength(1)
    expect(execForm(cmd[0]!)).toEqual(['node', 'dist/main.js'])
    expect(workdir(runtime)).toBe('/app')
  })

  it('exposes the proxy and admin ports, which are the settings defaults', () => {
    const exposed = ops(runtime, 'EXPOSE').flatMap((a) => a.split(/\s+/))
    const { port, adminPort } = defaultSettings()
    expect(exposed).toEqual(expect.arrayContaining([String(port), String(adminPort)]))
  })

  it('builds on an official slim Node LTS image (22 or 24), runs from scratch, and as the numeric non-root user the chart expects', () => {
    for (const s of stages.slice(0, -1))
      expect(s.from).toMatch(/^node:(22|24)(\.\d+)*-(bookworm-|trixie-)?slim(@sha256:[0-9a-f]{64})?$/)
    expect(runtime.from).toBe('scratch')
    const users = ops(runtime, 'USER')
    expect(users).toHaveLength(1)
    const [uid, gid] = users[0]!.split(':')
    expect(uid).toMatch(/^[1-9][0-9]*$/) // numeric, so Kubernetes' runAsNonRoot can verify it
    expect(Number(uid)).toBe(at(chartValues(), ['securityContext', 'runAsUser']))
    expect(Number(gid)).toBe(at(chartValues(), ['securityContext', 'runAsGroup']))
  })

  it('holds no npm and no shell: the runtime stage starts from scratch, runs nothing, and takes only node and its libraries from the Node image', () => {
    expect(ops(runtime, 'RUN')).toEqual([]) // there is no shell to run it
    const fromStages = copies(runtime)
      .map((c) => c.from)
      .filter((f) => f !== undefined)
    expect(new Set(fromStages)).toEqual(new Set(['rootfs', 'deps', 'build']))
    const root = copies(runtime).find((c) => c.from === 'rootfs')!
    expect([root.sources, root.dest]).toEqual([['/rootfs/'], '/']) // its contents, at the image's root
    const rootfs = stageNamed('rootfs')
    expect(ops(rootfs, 'RUN')).toEqual(['./image-rootfs.sh /rootfs /usr/local/bin/node'])
    expect(copies(rootfs).flatMap((c) => c.sources)).toEqual(['scripts/image-rootfs.sh'])
    // node is found through the image's PATH (the HEALTHCHECK and the chart's helm test call `node`)
    expect(Object.fromEntries(stageKeyValues(runtime, 'ENV')).PATH).toBe('/usr/local/bin')
  })

  it('ships production dependencies installed without scripts, dist/ from a build stage, and config/', () => {
    const byDest = new Map(
      copies(runtime).flatMap((c) => targets(c).map((t) => [t.target, { from: c.from, source: t.source }] as const)),
    )
    const modules = byDest.get('node_modules')
    expect(modules?.from).toBeDefined()
    const install = ops(stageNamed(modules!.from), 'RUN').find((r) => r.includes('npm ci'))
    expect(install).toMatch(/npm ci\b.*--omit=dev/)
    expect(install).toMatch(/npm ci\b.*--ignore-scripts/)

    const dist = byDest.get('dist')
    expect(dist?.from).toBeDefined()
    const build = stageNamed(dist!.from)
    expect(ops(build, 'RUN').some((r) => /npm run build/.test(r))).toBe(true)
    expect(dist!.source).toBe(`${workdir(build)}/dist`)

    expect(byDest.get('config')).toEqual({ from: undefined, source: 'config' })
    expect(byDest.get('package.json')).toMatchObject({ from: undefined }) // "type": "module" for dist/*.js
  })

  it('.dockerignore keeps out what the build must not see, and nothing the Dockerfile copies', () => {
    const patterns = dockerignorePatterns()
    const needed = [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'src/main.ts',
      'src/config/schema.ts',
      'config/endpoints.yaml',
      'config/versions.yaml',
    ]
    for (const s of stages) {
      for (const c of copies(s).filter((c) => c.from === undefined)) {
        for (const source of c.sources.filter((p) => p !== '.')) {
          expect(existsSync(join(REPO, source)), `${source} exists`).toBe(true)
          needed.push(source)
        }
      }
    }
    for (const path of needed) expect(dockerIgnored(patterns, path), `${path} is in the build context`).toBe(false)
    for (const path of [
      'node_modules/fastify/package.json',
      'dist/main.js',
      '.git/HEAD',
      'test/deploy/chart.ts',
      'helm/sluice/Chart.yaml',
    ]) {
      expect(dockerIgnored(patterns, path), `${path} is kept out`).toBe(true)
    }
  })
})

describe('the runtime stage, laid out from its COPY lines and started with its CMD', () => {
  const cleanups: (() => void)[] = []
  afterAll(() => cleanups.forEach((c) => c()))

  /** /app as the runtime stage builds it: context paths from the repo, earlier stages' /app paths from the repo's build. */
  function layOutImage(): string {
    expect(existsSync(join(REPO, 'dist/main.js')), 'dist/ is built (npm test builds it; or run npm run build)').toBe(
      true,
    )
    const root = mkdtempSync(join(tmpdir(), 'sluice-image-'))
    cleanups.push(() => rmSync(root, { recursive: true, force: true }))
    // node and its libraries (rootfs) are this machine's here; test/deploy/image-rootfs.test.ts runs that stage's script
    for (const c of copies(runtime).filter((c) => c.from !== 'rootfs')) {
      for (const { source, target } of targets(c)) {
        const from =
          c.from === undefined
            ? join(REPO, source)
            : join(REPO, source.replace(new RegExp(`^${workdir(stageNamed(c.from))}/?`), ''))
        const dest = join(root, target)
        // node_modules: the repo's (a superset of the image's production dependencies), linked rather than copied.
        if (source.endsWith('node_modules')) symlinkSync(from, dest, 'dir')
        else cpSync(from, dest, { recursive: true })
      }
    }
    return root
  }

  it('serves, proxies, passes its HEALTHCHECK, and exits 0 on SIGTERM', async () => {
    const seen: string[] = []
    const upstream: Server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`)
      res.setHeader('content-type', 'application/json')
      res.end('{"accountId":"1"}')
    })
    upstream.listen(0, '127.0.0.1')
    await once(upstream, 'listening')
    cleanups.push(() => upstream.close())
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v2`

    const root = layOutImage()
    const [command, ...args] = execForm(ops(runtime, 'CMD')[0]!)!
    const child = spawn(command === 'node' ? process.execPath : command!, args, {
      cwd: root, // the WORKDIR, /app
      // The image's ENV, then loopback instead of its 0.0.0.0 (tests listen on loopback only) and free ports.
      env: {
        ...Object.fromEntries(stageKeyValues(runtime, 'ENV')),
        PATH: process.env.PATH ?? '',
        SLUICE_HOST: '127.0.0.1',
        SLUICE_ADMIN_HOST: '127.0.0.1',
        SLUICE_PORT: '0',
        SLUICE_ADMIN_PORT: '0',
        SLUICE_UPSTREAM: upstreamUrl,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    cleanups.push(() => child.kill('SIGKILL'))
    let out = ''
    child.stderr.on('data', (d: Buffer) => (out += d.toString()))
    const listening = await new Promise<{ proxyUrl: string; adminUrl: string }>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString()
        const line = out.split('\n').find((l) => l.includes('"sluice listening"'))
        if (line) resolve(JSON.parse(line) as { proxyUrl: string; adminUrl: string })
      })
      child.once('exit', (code) => reject(new Error(`exited with ${code} before listening:\n${out}`)))
    })

    expect((await fetch(`${listening.adminUrl}/healthz`)).status).toBe(200)
    expect((await fetch(`${listening.adminUrl}/readyz`)).status).toBe(200)
    const res = await fetch(`${listening.proxyUrl}/v2/accounts/1`, {
      headers: { authorization: `Basic ${Buffer.from('org1:key').toString('base64')}` },
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ accountId: '1' })
    expect(seen).toEqual(['GET /v2/accounts/1'])

    const healthcheck = ops(runtime, 'HEALTHCHECK')[0]!
    const probe = execForm(healthcheck.slice(healthcheck.indexOf('CMD ') + 4))!
    expect(probe[0]).toBe('node')
    const runProbe = (): number | null =>
      spawnSync(process.execPath, probe.slice(1), {
        env: { PATH: process.env.PATH, SLUICE_ADMIN_PORT: new URL(listening.adminUrl).port },
        timeout: 10_000,
      }).status
    expect(runProbe()).toBe(0)

    child.kill('SIGTERM')
    const [code] = (await once(child, 'exit')) as [number | null]
    expect(code, out).toBe(0)
    expect(runProbe()).toBe(1)
  })
})
