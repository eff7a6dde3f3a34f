"""The report shows the statistics' caveats and the paired comparisons of results.json."""

from __future__ import annotations

from rich.console import Console

from hakari.aggregate import aggregate
from hakari.reports.markdown import markdown_report
from hakari.reports.rows import NEGATIVE_MEAN_NOTE
from hakari.reports.terminal import print_report
from hakari.results import DecodingResult, EvalResults, ModelResult, TaskResult, TemplateResult


def _results(scores: dict[str, float]) -> EvalResults:
    dec = DecodingResult(
        templates={
            t: TemplateResult(metrics={"pearson": s}, fallback_rate=0.0, n=10)
            for t, s in scores.items()
        },
        aggregate={"pearson": aggregate(scores).to_dict()},
    )
    task = TaskResult(language="ja", n_instances=10, metrics=["pearson"], decodings={"greedy": dec})
    return EvalResults(
        config={},
        versions={},
        models={"m": ModelResult(identity={"name": "m"}, tasks={"jsts": task})},
    )


def test_negative_mean_is_marked_in_markdown_and_terminal() -> None:
    md = markdown_report(_results({"0-0": -0.3, "1-0": 0.1}))
    assert "-0.083 †" in md  # mean -0.1, std 0.2: -0.1 / 1.2
    assert md.count(NEGATIVE_MEAN_NOTE) == 2  # under the summary and under the table
    console = Console(record=True, width=200)
    print_report(_results({"0-0": -0.3, "1-0": 0.1}), console)
    text = console.export_text()
    assert "-0.083 †" in text and "rewards spread" in text


def test_positive_mean_has_no_mark() -> None:
    md = markdown_report(_results({"0-0": 0.3, "1-0": 0.1}))
    assert "†" not in md
