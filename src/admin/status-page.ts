import { createHash } from 'node:crypto'
import { STATUS_PAGE_SCRIPT } from './page/script.js'
import { STATUS_PAGE_CSS } from './page/style.js'

/**
 * The live status page, one self-contained HTML document (docs/observability.md, "Status page");
 * mount it at `/` and `/status.html` and send it with `statusPageHeaders()`.
 */

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sluice status</title>
<style>${STATUS_PAGE_CSS}</style>
</head>
<body data-updates="0">
<header>
  <h1>sluice</h1>
  <span class="meta">limiter <span class="badge" data-field="mode">…</span></span>
  <span class="meta">backend <b data-field="backend">…</b></span>
  <span class="meta">up <b data-field="uptimeSeconds">…</b></span>
  <span class="badge bad" data-field="closing" hidden>shutting down</span>
  <span class="spacer"></span>
  <span class="meta error" data-field="error"></span>
  <span class="meta">updated <b data-field="updatedAt">never</b></span>
  <span class="badge" data-field="connection">connecting</span>
</header>
<main>
  <div class="tiles">
    <div class="tile"><div class="label">Active keys</div><div class="value" data-field="keyCount">0</div></div>
    <div class="tile"><div class="label">In flight</div><div class="value" data-field="totalInFlight">0</div></div>
    <div class="tile"><div class="label">Permits (sum of limits)</div><div class="value" data-field="totalLimit">0</div></div>
    <div class="tile"><div class="label">Queued</div><div class="value" data-field="totalQueued">0</div></div>
    <div class="tile"><div class="label">Oldest wait</div><div class="value" data-field="maxOldestWaitMs">0</div></div>
    <div class="tile"><div class="label">Permits saved</div><div class="value" data-field="totalSaved">0</div></div>
  </div>
  <section id="upstreams" hidden>
    <h2>Upstreams</h2>
    <table>
      <thead><tr><th>Upstream</th><th>Prefix</th><th>Credentials</th><th class="num">Active keys</th>
        <th class="num">In flight</th><th class="num">Queued</th><th class="num">Upstream 429s</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section id="keys">
    <h2>Permits by instance and endpoint
      <input id="filter" type="search" placeholder="filter: instance or endpoint" aria-label="filter keys"></h2>
    <table>
      <thead><tr><th>Instance</th><th>Endpoint</th><th>Permits in use</th><th class="num">In flight</th>
        <th class="num">Limit</th><th>Rate · next start</th><th class="num">Queued</th><th class="num">Oldest wait</th><th>Apps: held · waiting</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section id="saved" hidden>
    <h2>Permits saved by instance and endpoint <span class="count"></span></h2>
    <table>
      <thead><tr><th>Instance</th><th>Endpoint</th><th class="num">Coalesced</th><th class="num">Cache hits</th>
        <th class="num">Permits saved</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section id="shares" hidden>
    <h2>Shares: each app's use now <span class="count"></span></h2>
    <table>
      <thead><tr><th>App (or organisation)</th><th class="num">Memory held</th><th class="num">Queued</th><th class="num">Following calls</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section id="versions" hidden>
    <h2>API versions seen <span class="count"></span></h2>
    <table>
      <thead><tr><th>Version</th><th>State</th><th>Retires on</th><th class="num">Days left</th>
        <th class="num">Requests</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section id="details" hidden>
    <h2>Limiter details</h2>
    <dl></dl>
  </section>
</main>
<footer>Refreshes every <span data-field="refresh">2 s</span> from <a href="./status">/status</a>.
  Prometheus metrics: <a href="./metrics">/metrics</a>.</footer>
<script>${STATUS_PAGE_SCRIPT}</script>
</body>
</html>
`

export function renderStatusPage(): string {
  return PAGE
}

const sha256 = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`

/**
 * Headers to send the page with. The Content-Security-Policy allows exactly the page's own inline
 * style and script (by hash) and fetches to the same origin: nothing else can run or load.
 */
export function statusPageHeaders(): Record<string, string> {
  return { ...(headers ??= buildHeaders()) }
}

let headers: Record<string, string> | undefined
function buildHeaders(): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'content-security-policy': [
      "default-src 'none'",
      `script-src ${sha256(STATUS_PAGE_SCRIPT)}`,
      `style-src ${sha256(STATUS_PAGE_CSS)}`,
      "connect-src 'self'",
      "img-src 'self' data:",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
  }
}
