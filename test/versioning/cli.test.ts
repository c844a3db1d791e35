import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/** `npm run versions` runs the build (`npm test` builds before vitest). */
const CLI_JS = fileURLToPath(new URL('../../dist/versions-cli.js', import.meta.url))

function versions(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [CLI_JS, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
  })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

/** The table row of one version, as its cells. */
const row = (out: string, first: string): string[] | undefined =>
  out
    .split('\n')
    .find((l) => l.startsWith(`${first} `))
    ?.split(/ {2,}/)

describe('npm run versions', () => {
  it('prints the calendar and what the proxy does with each version on a given day', () => {
    const { code, out } = versions(['--date', '2026-09-12'])
    expect(code).toBe(0)
    expect(out).toMatch(
      /^API versions on 2026-09-12 \(UTC\), header NEON-API-VERSION, calendar .*config\/versions\.yaml\n/,
    )
    expect(out).toContain('retired versions: reject (410) · no header: pass · endpoint newer than the version: warn')
    expect(row(out, '2.9')).toEqual(['2.9', '–', '2026-09-12', 'retired', 'answers 410 here'])
    expect(row(out, '2.10')).toEqual(['2.10', '2024-12-14', '–', 'supported', 'forwards it'])
    expect(row(out, '2.12')).toEqual(['2.12', '2026-09-12', '–', 'supported', 'forwards it (the latest)'])
    expect(row(out, 'API v1')).toEqual(['API v1', '2026-07-11', 'retired', 'answers /v1 requests 410'])
    expect(out).toContain('  2.9   volunteer, group and opportunity endpoints (2024-11-16)')
  })

  it('follows the configured policy: rewrite, and a pinned missing header', () => {
    const { code, out } = versions(['--date', '2026-09-11'], {
      SLUICE_VERSIONS_RETIRED: 'rewrite',
      SLUICE_VERSIONS_MISSING: 'pin',
      SLUICE_VERSIONS_PIN: '2.11',
    })
    expect(code).toBe(0)
    expect(row(out, '2.8')?.at(-1)).toBe('rewrites it to 2.9')
    expect(row(out, '2.9')?.slice(3)).toEqual([
      'deprecated',
      'forwards it, with Deprecation and Sunset headers (retires in 1 day)',
    ])
    expect(row(out, '2.12')?.slice(3)).toEqual(['unreleased', 'forwards it (not released yet: the API decides)'])
    expect(row(out, '(no header)')?.at(-1)).toBe('sends 2.11 (pinned)')
  })

  it('--json prints the same snapshot /status serves', () => {
    const { code, out } = versions(['--date', '2026-09-12', '--json'])
    expect(code).toBe(0)
    const snapshot = JSON.parse(out) as {
      today: string
      latest: string
      versions: { version: string; action: string }[]
    }
    expect(snapshot.today).toBe('2026-09-12')
    expect(snapshot.latest).toBe('2.12')
    expect(snapshot.versions.find((v) => v.version === '2.9')?.action).toBe('reject')
  })

  it('a bad setting exits 78 naming it; a bad --date exits 64', () => {
    const bad = versions([], { SLUICE_VERSIONS_RETIRED: 'drop' })
    expect(bad.code).toBe(78)
    expect(bad.err).toContain('versions.retired (env SLUICE_VERSIONS_RETIRED)')
    const date = versions(['--date', '2026-02-30'])
    expect(date.code).toBe(64)
    expect(date.err).toContain('--date must be a date YYYY-MM-DD, got "2026-02-30"')
  })
})
