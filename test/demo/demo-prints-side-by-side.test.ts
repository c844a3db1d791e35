import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const DEMO_JS = fileURLToPath(new URL('../../dist/demo/main.js', import.meta.url))

describe('npm run demo', () => {
  it('shows 429s for the direct client and none through sluice, with the API never over its limits', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [DEMO_JS], { timeout: 30_000 })
    const row = (label: string): string[] => {
      const line = stdout.split('\n').find((l) => l.trimStart().startsWith(label))
      expect(line, label).toBeDefined()
      return line!.split('│').map((c) => c.trim())
    }
    const [, direct429, sluice429] = row('429 Too Many Requests')
    expect(Number(direct429)).toBeGreaterThan(0)
    expect(sluice429).toBe('0')
    expect(row('2xx answers')[2]).toBe('60')
    expect(row('most in progress at the API')[2]).toBe('/accounts/search: 1, /accounts/{id}/contacts: 5')
  })
})
