"""The page's stylesheet: print-friendly, one column, tables with tabular figures, and a
font stack that covers Japanese (Noto CJK on Linux, Hiragino on macOS, Yu Gothic on
Windows) so that no glyph falls back to boxes."""

from __future__ import annotations

SANS = (
    '"Inter", "Helvetica Neue", Arial, "Noto Sans CJK JP", "Noto Sans JP", '
    '"Hiragino Sans", "Hiragino Kaku Gothic ProN", "Yu Gothic", Meiryo, sans-serif'
)
MONO = (
    '"DejaVu Sans Mono", Menlo, Consolas, "Noto Sans Mono CJK JP", "Noto Sans CJK JP", '
    '"Hiragino Sans", "Yu Gothic", monospace'
)

CSS = f"""
:root{{--ink:#1d2330;--muted:#5b6475;--line:#d9dde5;--soft:#f4f6f9;--accent:#0b5cad;
--ok:#1b7f3b;--bad:#b3261e}}
*{{box-sizing:border-box}}
body{{font-family:{SANS};color:var(--ink);margin:0 auto;max-width:1180px;padding:24px 28px 60px;
line-height:1.45;font-size:14px;background:#fff}}
h1{{font-size:26px;margin:0 0 4px}}
h2{{font-size:20px;margin:36px 0 6px;padding-top:10px;border-top:2px solid var(--ink)}}
h3{{font-size:16px;margin:26px 0 8px;color:var(--accent)}}
h4{{font-size:14px;margin:18px 0 6px}}
h5{{font-size:13px;margin:12px 0 4px;color:var(--muted)}}
code,pre{{font-family:{MONO};font-size:12px}}
pre{{white-space:pre-wrap;word-break:break-word;margin:0}}
.meta,.note,figcaption,caption{{color:var(--muted);font-size:12.5px}}
caption{{text-align:left;caption-side:bottom;padding-top:4px}}
nav{{display:flex;flex-wrap:wrap;gap:6px 14px;margin-top:8px}}
nav a,th a{{color:var(--accent);text-decoration:none}}
nav a:hover{{text-decoration:underline}}
header.top{{border-bottom:1px solid var(--line);padding-bottom:10px}}
.scroll{{overflow-x:auto;margin:6px 0 10px}}
table{{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:13px}}
th,td{{padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top;text-align:left}}
thead th{{border-bottom:1.5px solid var(--ink);font-weight:600;white-space:nowrap}}
td.n,th.n{{text-align:right}}
.leaderboard td:first-child{{white-space:nowrap}}
.leaderboard td{{white-space:nowrap}}
.ci{{color:var(--muted);font-size:11.5px}}
.model{{font-weight:600;word-break:break-all}}
div.overall{{margin:8px 0 14px}} div.overall p{{margin:4px 0}}
ul.warnings{{margin:4px 0;padding-left:20px;color:#7a4b00}}
.flag{{display:inline-block;background:#fff4e0;color:#7a4b00;border:1px solid #f0c36d;
border-radius:3px;padding:0 4px;font-size:11px;margin:1px 2px;white-space:normal}}
.heatmap td,.heatmap th{{padding:2px 3px;border-bottom:none}}
.heatmap thead th{{font-family:{MONO};font-size:11px;font-weight:500}}
.heatmap td:first-child{{padding-right:10px;text-align:left}}
.cell{{display:block;min-width:44px;padding:3px 4px;border-radius:2px;text-align:center;
font-size:12px;line-height:1.2}}
.cell small.fb{{display:block;font-size:9.5px;opacity:.85}}
.na{{color:var(--muted)}}
.overview td{{white-space:nowrap}}
.ov{{display:block}}
.ov.best{{font-weight:700}}
small.sub{{display:block;color:var(--muted);font-size:11px}}
figure{{margin:10px 0 16px}}
.matrices{{display:flex;flex-wrap:wrap;gap:8px 32px;align-items:flex-start}}
svg.chart{{max-width:100%;height:auto;display:block}}
svg.chart text{{font-family:{SANS}}}
.cols{{display:grid;grid-template-columns:3fr 2fr;gap:4px 32px}}
dl.kv{{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0;font-size:12.5px}}
dl.kv dt{{color:var(--muted)}}
dl.kv dd{{margin:0;word-break:break-all}}
table.identity td{{font-size:12px}} table.identity code{{word-break:break-all}}
pre.cmd{{background:var(--soft);border:1px solid var(--line);padding:8px 10px;border-radius:4px}}
section.run{{margin-bottom:18px}}
details.guide{{margin:10px 0;font-size:13px}}
details.guide summary{{cursor:pointer;color:var(--accent)}}
details.samples{{margin:18px 0}}
details.samples>summary{{cursor:pointer;font-size:16px;font-weight:600;color:var(--accent)}}
.samplebox input{{position:absolute;opacity:0;pointer-events:none}}
.samplebox label{{display:inline-block;border:1px solid var(--line);border-radius:12px;
padding:1px 10px;margin:2px 2px;cursor:pointer;font-size:12px;background:#fff}}
.samplebox input:checked+label{{background:var(--ink);color:#fff;border-color:var(--ink)}}
.samplebox input:focus-visible+label{{outline:2px solid var(--accent)}}
.filter-name{{display:inline-block;width:70px;color:var(--muted);font-size:12px}}
.blocks{{margin-top:10px}}
.blk{{border:1px solid var(--line);border-radius:4px;margin:10px 0;padding:8px 10px}}
.blk header{{font-size:12.5px;color:var(--muted);margin-bottom:4px}}
.blk code.gold{{color:var(--ink);font-weight:600}}
pre.prompt{{background:var(--soft);padding:6px 8px;max-height:11em;overflow:auto;
border-radius:3px;margin-bottom:6px}}
table.answers{{width:100%;table-layout:fixed}}
table.answers th:nth-child(1){{width:20%}} table.answers th:nth-child(2){{width:10%}}
table.answers th:nth-child(4){{width:14%}} table.answers th:nth-child(5){{width:8%}}
table.answers th:nth-child(6){{width:10%}}
table.answers td{{font-size:12.5px}}
pre.out{{max-height:7em;overflow:auto}}
tr.ok .verdict{{color:var(--ok)}}
tr.bad .verdict{{color:var(--bad)}}
.verdict{{white-space:nowrap}}
footer{{margin-top:40px;color:var(--muted);font-size:12px;border-top:1px solid var(--line);
padding-top:8px}}
@media print{{body{{max-width:none;padding:0}} .samplebox input,.samplebox label{{display:none}}
pre.prompt,pre.out{{max-height:none}} h2{{break-before:auto}} table,figure{{break-inside:avoid}}}}
"""
