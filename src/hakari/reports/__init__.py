"""Views of finished runs, none of which needs a model: the terminal tables
(`terminal.py`) and Markdown (`markdown.py`) of one `EvalResults`, one self-contained HTML
page per set of runs (`page.py`: tables, inline SVG figures, a sample browser; no script,
no network), CSV exports (`csv_export.py`), the meta-evaluation sections (`meta.py`) and
the pfgen-bench leaderboard page (`pfgen.py`). `inputs.py` reads runs and meta files;
`views.py` holds what several views derive from them; `markup.py` escapes every string.

Also `rows.py` (the rows both text views show), `tables.py` (leaderboard and per-template
heatmap), `charts.py` (figures as inline SVG), `samples.py` (the sample browser),
`correctness.py` (a sample's answer right or not, for its filter), `style.py` (the page's
stylesheet), `verdict.py` (the run's verdict in words, and its warnings), `live.py` (what
`hakari run` shows while it runs and when it ends), `labels.py` (short, unique labels for
long model specs in narrow tables), `leaderboards.py` (a family's leaderboard view as
rows, for the terminal, Markdown and the page).
"""
