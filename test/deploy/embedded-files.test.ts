import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { CHART_DIR, readText, REPO, stripComments, templateActions, templates } from './chart.js'

/**
 * The chart embeds ops/ files (alerting rules, Grafana dashboard) through copies in helm/sluice/files,
 * made by helm/sync-ops.sh, because a chart can only read files inside itself. The copies must not
 * drift from ops/.
 */

/** `copy <ops source> <chart copy>` lines of sync-ops.sh, repo-relative. */
const pairs = [...readText(join(REPO, 'helm/sync-ops.sh')).matchAll(/^copy (\S+) (\S+)$/gm)].map((m) => ({
  source: m[1]!,
  copy: m[2]!,
}))

/** Chart-relative paths the templates read with .Files.Get (directly or through a `$file := "…"`). */
const embedded = [...templates().values()].flatMap((text) =>
  templateActions(stripComments(text)).flatMap((a) => [...a.matchAll(/"(files\/[^"]+)"/g)].map((m) => m[1]!)),
)

describe('files the chart embeds', () => {
  it('every file a template reads is one sync-ops.sh copies from ops/', () => {
    expect(embedded.sort()).toEqual(['files/sluice-alerts.yaml', 'files/sluice-dashboard.json'])
    const copies = pairs.map((p) => p.copy)
    for (const file of embedded) expect(copies).toContain(`helm/sluice/${file}`)
    expect(pairs.map((p) => p.source).sort()).toEqual([
      'ops/grafana/sluice-dashboard.json',
      'ops/prometheus/sluice-alerts.yaml',
    ])
  })

  for (const { source, copy } of pairs) {
    it.skipIf(!existsSync(join(REPO, source)))(
      `${copy} equals ${source} (run helm/sync-ops.sh after changing it)`,
      () => {
        expect(existsSync(join(REPO, copy)), `${copy} exists: run helm/sync-ops.sh`).toBe(true)
        expect(
          readText(join(REPO, copy)) === readText(join(REPO, source)),
          `${copy} differs from ${source}: run helm/sync-ops.sh`,
        ).toBe(true)
      },
    )
  }

  it.skipIf(!existsSync(join(CHART_DIR, 'files/sluice-alerts.yaml')))(
    'the alerts copy is a Prometheus rules file',
    () => {
      const rules = parseYaml(readText(join(CHART_DIR, 'files/sluice-alerts.yaml'))) as {
        groups?: { name: string; rules: unknown[] }[]
      }
      expect(Array.isArray(rules.groups) && rules.groups.length).toBeGreaterThan(0)
      for (const g of rules.groups!) expect(g.rules.length, g.name).toBeGreaterThan(0)
    },
  )

  it.skipIf(!existsSync(join(CHART_DIR, 'files/sluice-dashboard.json')))(
    'the dashboard copy is a Grafana dashboard',
    () => {
      const board = JSON.parse(readText(join(CHART_DIR, 'files/sluice-dashboard.json'))) as {
        title?: string
        panels?: unknown[]
      }
      expect(typeof board.title).toBe('string')
      expect(board.panels?.length).toBeGreaterThan(0)
    },
  )
})
