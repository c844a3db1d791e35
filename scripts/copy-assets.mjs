// Copies what src/ reads at run time but tsc does not emit (the status page's browser script) into dist/.
// Run by `npm run build` and by the test run's build (test/support/build.ts).
import { cpSync } from 'node:fs'

const ASSETS = ['admin/page/status-page.js']

for (const asset of ASSETS) {
  cpSync(new URL(`../src/${asset}`, import.meta.url), new URL(`../dist/${asset}`, import.meta.url))
}
