/** The status page's stylesheet: no external fonts or assets (clusters often have no internet). */
export const STATUS_PAGE_CSS = `
:root {
  --bg: #f6f7f9; --panel: #fff; --ink: #1d2330; --muted: #687387; --line: #e2e6ec;
  --ok: #1f9d55; --warn: #d98b00; --bad: #d64545; --info: #2f6fde; --bar: #e9edf3;
  font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: var(--ink); background: var(--bg);
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; }
header { display: flex; flex-wrap: wrap; align-items: center; gap: 12px 20px; padding: 12px 20px;
  background: #1d2330; color: #fff; }
header h1 { font-size: 18px; margin: 0 8px 0 0; font-weight: 600; letter-spacing: .2px; }
header .meta { color: #b9c2d3; font-size: 13px; }
header .meta b { color: #fff; font-weight: 600; }
.badge { display: inline-block; padding: 2px 8px; border-radius: 10px; font-size: 12px; font-weight: 600;
  text-transform: uppercase; letter-spacing: .4px; background: var(--muted); color: #fff; }
.badge.ok { background: var(--ok); } .badge.warn { background: var(--warn); } .badge.bad { background: var(--bad); }
.badge.info { background: var(--info); }
.spacer { flex: 1; }
main { padding: 16px 20px 32px; max-width: 1400px; }
.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(160px, 1fr)); gap: 12px; margin-bottom: 16px; }
.tile { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; }
.tile .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .4px; }
.tile .value { font-size: 24px; font-weight: 600; font-variant-numeric: tabular-nums; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; margin-bottom: 16px; }
section > h2 { font-size: 14px; margin: 0; padding: 10px 14px; border-bottom: 1px solid var(--line);
  display: flex; align-items: center; gap: 12px; }
section > h2 .count { color: var(--muted); font-weight: 400; }
input[type=search] { margin-left: auto; padding: 4px 8px; border: 1px solid var(--line); border-radius: 4px;
  font: inherit; min-width: 220px; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 6px 14px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { font-size: 12px; color: var(--muted); font-weight: 600; text-transform: uppercase; letter-spacing: .4px;
  background: #fafbfc; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.learned { font-style: italic; }
td.endpoint { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
tr.instance-first td.instance { font-weight: 600; }
tr:not(.instance-first) td.instance { color: transparent; }
tr.upstream-first td { border-top: 2px solid var(--muted); }
tr.waiting { background: #fff8e6; }
tr.late { background: #fdecec; }
td.bar-cell { width: 32%; min-width: 160px; }
.bar { position: relative; height: 14px; background: var(--bar); border-radius: 3px; overflow: hidden; }
.bar > span { position: absolute; left: 0; top: 0; bottom: 0; background: var(--ok); transition: width .3s; }
.bar.full > span { background: var(--warn); }
.bar.over > span { background: var(--bad); }
.empty td { color: var(--muted); text-align: center; padding: 18px; }
.late-text { color: var(--bad); font-weight: 600; }
tr.idle td { opacity: .55; }
td.apps { white-space: normal; }
.app { display: inline-block; margin: 1px 8px 1px 0; font-size: 12px; font-variant-numeric: tabular-nums; }
.app b { font-weight: 600; }
.app.more { color: var(--muted); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; padding: 10px 14px; }
dt { color: var(--muted); } dd { margin: 0; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 13px; word-break: break-all; }
.error { color: #ffd1d1; }
footer { color: var(--muted); font-size: 12px; padding: 0 20px 20px; }
footer a { color: var(--muted); }
`
