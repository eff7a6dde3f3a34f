"""`hakari pfgen leaderboard --html`: the ranked table with CIs, flags and the F/T/H chart,
every model name escaped."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from hakari.cli.pfgen import app
from hakari.pfgen.leaderboard import Entry, flag_and_rank
from hakari.reports.pfgen import leaderboard_html
from tests.helpers.html_elements import parse_html

from .test_cli import _result_dir

HOSTILE = '<script>x()</script>|"q"\'モデル'


def _entry(model: str, score: float, ci: bool = True, temperature: float = 1.0) -> Entry:
    return Entry(
        model=model, mode="qa", temperature=temperature, num_trials=10, score=score,
        score_std=0.01, ci_low=score - 0.02 if ci else None, ci_high=score + 0.02 if ci else None,
        fluency=score, truthfulness=min(score + 0.1, 1), helpfulness=score / 2, length=100.0,
        origin="x",
    )  # fmt: skip


def test_page_ranks_escapes_and_keeps_missing_cis_missing() -> None:
    ranked = flag_and_rank(
        [_entry("a", 0.6), _entry(HOSTILE, 0.7), _entry("published", 0.5, ci=False, temperature=0)]
    )
    html = leaderboard_html(ranked)
    parsed = parse_html(html)
    text = "".join(parsed.text)
    assert "script" not in parsed.tags
    assert HOSTILE in text
    assert text.index(HOSTILE) < text.index("0.6000")  # ranked by score
    assert "[0.6800, 0.7200]" in text
    start = html.index('<span class="model">published')
    published_row = html[start : html.index("</tr>", start)]
    assert "no trials, no CI" in published_row and "[" not in published_row
    assert "T=0" in published_row  # flagged
    assert html.count('<svg class="chart"') == 2  # forest plot and F/T/H scatter


def test_cli_writes_the_page(small_data: Path, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _result_dir(root, "a", 1.0, 3)
    _result_dir(root, "b", 0.0, 1)
    out = tmp_path / "lb.html"
    result = CliRunner().invoke(
        app,
        ["leaderboard", str(root), "--data-dir", str(small_data), "--cache-dir", str(tmp_path),
         "--bootstrap", "200", "--html", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert "Fluency, truthfulness, helpfulness" in page and "1 trials" in page
