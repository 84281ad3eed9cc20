/** The console page's stylesheet (inlined by `page.ts`, allowed by its hash in the CSP). */

/** The stylesheet, exactly as inlined: its SHA-256 is in the page's Content-Security-Policy. */
export const CONSOLE_STYLE = `
:root { color-scheme: light; --fg: #1d2430; --muted: #5f6b7a; --line: #d5dae1; --head: #f2f4f7;
  --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --info: #0b5cad; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg); background: #fff; }
header { display: flex; align-items: center; gap: 16px; padding: 10px 20px; border-bottom: 1px solid var(--line); background: var(--head); }
header h1 { font-size: 17px; margin: 0; }
#status { color: var(--muted); flex: 1; }
#status.stale { color: var(--bad); }
main, #login { padding: 8px 20px 24px; }
section { margin-top: 18px; }
h2 { font-size: 15px; margin: 0 0 6px; }
h3 { font-size: 13px; margin: 12px 0 4px; color: var(--muted); font-weight: 600; }
table { border-collapse: collapse; min-width: 40%; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; white-space: nowrap; }
th { background: var(--head); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 12px; }
td.empty { color: var(--muted); font-style: italic; }
td.marks { white-space: normal; min-width: 120px; }
.muted { color: var(--muted); }
.ok { color: var(--ok); font-weight: 600; }
.warn { color: var(--warn); font-weight: 600; }
.bad { color: var(--bad); font-weight: 600; }
.info { color: var(--info); font-weight: 600; }
.mark { display: inline-block; padding: 0 5px; margin-right: 3px; border-radius: 3px; font-size: 12px; border: 1px solid currentColor; }
#totals td { min-width: 80px; }
#totals th { font-weight: 500; }
form label { display: block; margin: 12px 0 6px; font-weight: 600; }
input[type=password] { width: 340px; max-width: 100%; padding: 5px 7px; font: inherit; }
button { font: inherit; padding: 4px 12px; cursor: pointer; }
.error { color: var(--bad); min-height: 1.4em; }
nav { display: flex; gap: 4px; }
nav a { padding: 2px 10px; border: 1px solid transparent; border-radius: 4px; color: var(--info); text-decoration: none; }
nav a[aria-current=page] { background: #fff; border-color: var(--line); color: var(--fg); font-weight: 600; }
code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 12px; background: var(--head); padding: 0 3px; border-radius: 3px; }
form.controls { display: flex; flex-wrap: wrap; align-items: flex-end; gap: 14px; margin-top: 12px; }
form.controls label { display: flex; flex-direction: column; gap: 3px; margin: 0; font-weight: 600; }
form.controls select, form.controls input { font: inherit; padding: 3px 6px; min-width: 130px; }
#spend-note { margin: 4px 0 0; }
#ledger-off { max-width: 760px; border: 1px solid var(--line); border-left: 4px solid var(--warn); padding: 4px 14px; }
#spend-chart { margin: 0; max-width: 1100px; }
#chart-svg { display: block; width: 100%; height: auto; aspect-ratio: 960 / 280; }
#spend-legend svg { flex: none; }
#spend-chart .axis text { fill: var(--muted); font-size: 11px; }
#spend-chart .axis line.grid { stroke: var(--line); stroke-dasharray: 3 3; }
#spend-chart .axis line.base { stroke: var(--muted); }
#spend-chart text.none { fill: var(--muted); font-style: italic; }
#spend-legend { list-style: none; display: flex; flex-wrap: wrap; gap: 4px 18px; margin: 6px 0 0; padding: 0 0 0 76px; }
#spend-legend li { display: flex; align-items: center; gap: 5px; }
#top-keys tfoot td { font-weight: 600; background: var(--head); }
`;
