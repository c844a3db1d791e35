import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { REPO } from './chart.js'
import { readDockerfile } from './dockerfile.js'
import { needs } from '../support/tools.js'

/**
 * The Dockerfile built for real, wherever a builder is there and can reach a base image: docker
 * (with a daemon), podman or buildah. Where none can, the test is skipped and says why on stderr
 * and in its skip note. Where the pinned base cannot be pulled (no registry) but
 * SLUICE_IMAGE_TEST_BASE names a local stand-in (test/deploy/stand-in-base.sh builds one from
 * Debian and npm packages), the Dockerfile is built on that instead, and the test says so. The
 * image is then started on the host's network (loopback) and asked for /healthz and /readyz.
 */

type Builder = 'docker' | 'podman' | 'buildah'
const env = { ...process.env, DOCKER_CLI_HINTS: 'false', BUILDAH_ISOLATION: process.env.BUILDAH_ISOLATION ?? 'chroot' }
interface Ran {
  status: number | null
  stdout: string
  stderr: string
  error?: Error
}
const run = (cmd: string, args: readonly string[], timeoutMs: number): Ran =>
  spawnSync(cmd, args, { cwd: REPO, encoding: 'utf8', timeout: timeoutMs, env })

/** As run, without blocking the test worker (a build takes minutes; vitest's worker must keep answering). */
function runLong(cmd: string, args: readonly string[], timeoutMs: number): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('error', (error) => {
      clearTimeout(timer)
      resolve({ status: null, stdout, stderr, error })
    })
    child.once('close', (status) => {
      clearTimeout(timer)
      resolve({ status, stdout, stderr })
    })
  })
}

/** The line that says what went wrong: the first starting with "Error", else the first. */
function why(r: Ran): string {
  const lines = `${r.error?.message ?? ''}\n${r.stderr}\n${r.stdout}`
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
  return lines.find((l) => /^error\b/i.test(l)) ?? lines[0] ?? ''
}

/** The first builder that answers, or why none does. */
function findBuilder(): { builder: Builder } | { reason: string } {
  const reasons: string[] = []
  const checks: [Builder, string[]][] = [
    ['docker', ['version', '--format', '{{.Server.Version}}']],
    ['podman', ['info', '--format', '{{.Host.Arch}}']],
    ['buildah', ['info']],
  ]
  for (const [builder, args] of checks) {
    const r = run(builder, args, 20_000)
    if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
      reasons.push(`${builder}: not installed`)
      continue
    }
    if (r.status === 0) return { builder }
    reasons.push(`${builder}: ${why(r)}`)
  }
  return { reason: reasons.join('; ') }
}

const found = findBuilder()
const pinned = readDockerfile().args.get('NODE_IMAGE')!
const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }
const cleanups: (() => void)[] = []
afterAll(() => cleanups.reverse().forEach((c) => c()))

interface ImageConfig {
  User?: string
  Cmd?: string[]
  Env?: string[]
  Labels?: Record<string, string>
}

/** Starts the image's CMD on the host's network, on loopback and free ports; resolves with its admin URL. */
async function startImage(builder: Builder, tag: string): Promise<{ adminUrl: string; stop: () => void }> {
  const sluiceEnv = {
    SLUICE_HOST: '127.0.0.1',
    SLUICE_ADMIN_HOST: '127.0.0.1',
    SLUICE_PORT: '0',
    SLUICE_ADMIN_PORT: '0',
  }
  const envFlags = Object.entries(sluiceEnv).flatMap(([k, v]) => ['--env', `${k}=${v}`])
  let args: string[]
  if (builder === 'buildah') {
    const ctr = run('buildah', ['from', tag], 60_000).stdout.trim()
    cleanups.push(() => void run('buildah', ['rm', ctr], 60_000))
    args = [
      'run',
      '--network',
      'host',
      '--workingdir',
      '/app',
      '--user',
      '1000:1000',
      ...envFlags,
      ctr,
      '--',
      'node',
      'dist/main.js',
    ]
  } else {
    args = ['run', '--rm', '--network', 'host', ...envFlags, tag]
  }
  const child = spawn(builder, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] })
  const stop = (): void => void child.kill('SIGTERM')
  cleanups.push(stop)
  let out = ''
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const adminUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the image did not start in 60 s:\n${out}`)), 60_000)
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
      const line = out.split('\n').find((l) => l.includes('"sluice listening"'))
      if (line) {
        clearTimeout(timer)
        resolve((JSON.parse(line) as { adminUrl: string }).adminUrl)
      }
    })
    child.once('exit', (code) => reject(new Error(`the image exited with ${code}:\n${out}`)))
  })
  return { adminUrl, stop }
}

describe('the image, built', () => {
  it(`builds from the Dockerfile; the image runs node dist/main.js as 1000:1000, binds 0.0.0.0, carries the OCI labels, and serves ${needs('container builder')}`, async (ctx) => {
    const skip = (why: string): never => {
      console.warn(`image build SKIPPED: ${why}`)
      return ctx.skip(why)
    }
    if ('reason' in found) return skip(`no builder that works here (${found.reason})`)
    const { builder } = found
    let base = pinned
    const pull = await runLong(builder, ['pull', pinned], 300_000)
    if (pull.status !== 0) {
      const standIn = process.env.SLUICE_IMAGE_TEST_BASE
      if (!standIn)
        return skip(
          `${builder} cannot pull the base image ${pinned} (${why(pull)}) and SLUICE_IMAGE_TEST_BASE names no stand-in`,
        )
      console.warn(
        `image build: ${pinned} cannot be pulled (${why(pull)}); building on the stand-in ${standIn} instead`,
      )
      base = standIn
    }

    const tag = `localhost/sluice-build-test:${process.pid}`
    const revision = run('git', ['rev-parse', 'HEAD'], 10_000).stdout.trim() || 'unknown'
    const build = await runLong(
      builder,
      [
        'build',
        '--build-arg',
        `NODE_IMAGE=${base}`,
        '--build-arg',
        `REVISION=${revision}`,
        '--build-arg',
        `CREATED=${new Date().toISOString()}`,
        '-t',
        tag,
        '.',
      ],
      540_000,
    )
    cleanups.push(() => void run(builder, builder === 'buildah' ? ['rmi', tag] : ['image', 'rm', tag], 60_000))
    expect(build.status, `${builder} build failed:\n${build.stdout}\n${build.stderr}`).toBe(0)

    const inspect = run(
      builder,
      builder === 'buildah' ? ['inspect', '--type', 'image', tag] : ['image', 'inspect', tag],
      30_000,
    )
    expect(inspect.status, inspect.stderr).toBe(0)
    const parsed = JSON.parse(inspect.stdout) as unknown
    const config =
      builder === 'buildah'
        ? (parsed as { OCIv1: { config: ImageConfig } }).OCIv1.config
        : (parsed as { Config: ImageConfig }[])[0]!.Config
    expect(config.User).toBe('1000:1000')
    expect(config.Cmd).toEqual(['node', 'dist/main.js'])
    expect(config.Env).toEqual(
      expect.arrayContaining(['NODE_ENV=production', 'SLUICE_HOST=0.0.0.0', 'SLUICE_ADMIN_HOST=0.0.0.0']),
    )
    const labels = config.Labels ?? {}
    expect(labels['org.opencontainers.image.revision']).toBe(revision)
    expect(labels['org.opencontainers.image.version']).toBe(version)
    expect(labels['org.opencontainers.image.base.name']).toBe(base)

    const image = await startImage(builder, tag)
    expect((await fetch(`${image.adminUrl}/healthz`)).status).toBe(200)
    expect((await fetch(`${image.adminUrl}/readyz`)).status).toBe(200)
    // the build wrote the commit into the image (dist/revision): sluice_build_info names it
    expect(await (await fetch(`${image.adminUrl}/metrics`)).text()).toContain(`revision="${revision.slice(0, 12)}"`)
    image.stop()
  }, 900_000)
})
