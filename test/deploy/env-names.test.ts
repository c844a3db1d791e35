import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ENV_PREFIX, envBindings } from '../../src/config/env.js'
import { settingsSchema } from '../../src/config/schema.js'
import { CHART_DIR, listFiles, readText, REPO } from './chart.js'

/** The chart and the Dockerfile name only env vars that sluice reads, so they cannot drift from the code. */

const known = new Set([...envBindings(settingsSchema).map((b) => b.name), `${ENV_PREFIX}CONFIG`])
const namesIn = (text: string): string[] => [...text.matchAll(/\bSLUICE_[A-Z0-9_]*[A-Z0-9]\b/g)].map((m) => m[0])

describe('SLUICE_* names in the deployment files', () => {
  const files = [
    ...listFiles(CHART_DIR).map((f) => join(CHART_DIR, f)),
    join(REPO, 'Dockerfile'),
    join(REPO, 'helm/sync-ops.sh'),
  ]

  it('are all settings of the schema (or SLUICE_CONFIG)', () => {
    const used = new Map<string, string[]>()
    for (const file of files)
      for (const name of namesIn(readText(file))) used.set(name, [...(used.get(name) ?? []), file])
    // The chart sets these itself; if one stopped being found, the scan would be broken, not the chart fine.
    expect([...used.keys()]).toEqual(
      expect.arrayContaining([
        'SLUICE_PORT',
        'SLUICE_ADMIN_PORT',
        'SLUICE_HOST',
        'SLUICE_UPSTREAM',
        'SLUICE_REDIS_URL',
        'SLUICE_CONFIG',
        'SLUICE_ADMIN_PORT',
      ]),
    )
    const unknown = [...used]
      .filter(([name]) => !known.has(name))
      .map(([name, where]) => `${name} (${where.join(', ')})`)
    expect(unknown).toEqual([])
  })

  it('the scan itself rejects a name that is not a setting', () => {
    expect(namesIn('- name: SLUICE_REDIS_URI\n  value: x').filter((n) => !known.has(n))).toEqual(['SLUICE_REDIS_URI'])
  })
})
