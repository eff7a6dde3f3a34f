"""Reports people look at: one self-contained HTML page per set of runs (tables, inline
SVG figures, a sample browser; no script, no network), CSV exports, and the pfgen-bench
leaderboard page. `hakari report` and `hakari pfgen leaderboard --html` call these."""

from __future__ import annotations

from hakari.reports.csv_export import write_csv
from hakari.reports.inputs import ReportData, load_inputs
from hakari.reports.page import build_html

__all__ = ["ReportData", "build_html", "load_inputs", "write_csv"]
