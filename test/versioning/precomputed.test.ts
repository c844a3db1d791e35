import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createVersioning, DEFAULT_CALENDAR_FILE } from '../../src/versioning/index.js'
import { versionSettingsSchema } from '../../src/versioning/settings.js'
import { CUSTOM_OBJECTS, PLAIN, versioningAt } from './helpers.js'

describe('decisions are computed once a day, not per request', () => {
  it('the same version on the same day gets the very same decision object, a new one the next day', () => {
    const h = versioningAt('2026-09-11T08:00:00Z', { retired: 'rewrite' })
    const first = h.versioning.decide('2.9', PLAIN)
    expect(h.versioning.decide('2.9', PLAIN)).toBe(first)
    expect(h.versioning.decide('2.9', CUSTOM_OBJECTS)).toBe(h.versioning.decide('2.9', CUSTOM_OBJECTS)) // a cached gate warning
    expect(Object.isFrozen(first) && Object.isFrozen(first.responseHeaders)).toBe(true)
    h.setNow('2026-09-11T20:00:00Z')
    expect(h.versioning.decide('2.9', PLAIN)).toBe(first)
    h.setNow('2026-09-12T00:00:00Z')
    expect(h.versioning.decide('2.9', PLAIN)).not.toBe(first)
  })

  it('the calendar file is read once, at creation: changing it afterwards changes nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-versions-'))
    const file = join(dir, 'versions.yaml')
    copyFileSync(DEFAULT_CALENDAR_FILE, file)
    try {
      const quiet = { info() {}, warn() {}, error() {} }
      const v = createVersioning(versionSettingsSchema.parse({ calendarFile: file }), {
        log: quiet,
        now: () => new Date('2026-09-12T10:00:00Z'),
      })
      writeFileSync(file, 'not: [valid')
      expect(() => v.decide('2.9', PLAIN)).toThrow(/was retired on 2026-09-12/)
      rmSync(file)
      expect(v.decide('2.11', PLAIN).upstream).toBe('2.11')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
