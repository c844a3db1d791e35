import { readFileSync } from 'node:fs'

/**
 * The status page's browser script: status-page.js beside this file, a real script linted with browser
 * globals (eslint.config.js), read once at start. The build copies it into dist/ (scripts/copy-assets.mjs).
 */
export const STATUS_PAGE_SCRIPT = readFileSync(new URL('./status-page.js', import.meta.url), 'utf8')
