"""`hakari run` with several models: paired comparisons in results.json and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from hakari.backends.fake import FakeBackend
from hakari.reports.markdown import markdown_report
from hakari.reports.terminal import print_report
from hakari.runner import evaluate
from tests.helpers.oracle import TASK, half_oracle, oracle_table


def test_two_models_get_paired_differences(tmp_path: Path) -> None:
    table = oracle_table(TASK)
    oracle = FakeBackend(lambda r: table[r.prompt], name="oracle")
    spiky = FakeBackend(half_oracle(TASK), name="spiky")
    backends = {"oracle": oracle, "spiky": spiky}
    res = evaluate(
        models=["oracle", "spiky"],
        tasks=[TASK],
        decodings=["greedy"],
        n_boot=200,
        cache_dir=tmp_path / "cache",
        output_dir=tmp_path / "run",
        backend_factory=lambda s: backends[s],
    )
    assert res.paired is not None
    comparisons = res.paired[TASK]["greedy"]
    assert [(c.model_a, c.model_b, c.metric) for c in comparisons] == [
        ("oracle", "spiky", m) for m in res.models["oracle"].tasks[TASK].metrics
    ]
    acc = next(c for c in comparisons if c.metric == "accuracy")
    a = res.models["oracle"].tasks[TASK].decodings["greedy"].aggregate["accuracy"]
    b = res.models["spiky"].tasks[TASK].decodings["greedy"].aggregate["accuracy"]
    # the differences of the published point estimates
    assert acc.mean.diff == a.mean - b.mean == pytest.approx(0.25)
    assert acc.sharpe.diff == a.sharpe - b.sharpe
    assert acc.sharpe.verdict == "a_better" and acc.sharpe.ci_low > 0
    assert acc.ci_method == a.ci_method == "studentized"
    assert (acc.n_boot, acc.seed, acc.n_templates) == (200, a.seed, 6)
    on_disk = json.loads((tmp_path / "run" / "results.json").read_text())
    assert on_disk["paired"][TASK]["greedy"][0] == comparisons[0].to_dict()

    md = markdown_report(res)
    assert "### Paired differences A − B · demo_sentiment_en · greedy" in md
    assert "| oracle | spiky | accuracy | +0.250 \\[" in md and "A better" in md
    console = Console(record=True, width=220)
    print_report(res, console)
    assert "paired differences A − B" in console.export_text()


def test_paired_model_names_are_escaped_in_markdown(tmp_path: Path) -> None:
    table = oracle_table(TASK)
    names = ["a|<img src=x onerror=alert(1)>", "b"]
    res = evaluate(
        models=names,
        tasks=[TASK],
        decodings=["greedy"],
        n_boot=50,
        cache_dir=tmp_path,
        backend_factory=lambda s: FakeBackend(lambda r: table[r.prompt], name="x"),
    )
    md = markdown_report(res)
    # The command block at the top is a fenced code block (never read as HTML); every
    # table cell and heading below it escapes.
    command, body = md.split("### Summary", 1)
    assert command.splitlines()[2].startswith("```") and command.rstrip().endswith("```")
    assert "<img" not in body and "a\\|&lt;img src=x onerror=alert(1)&gt;" in body


def test_one_model_has_no_paired_section(tmp_path: Path) -> None:
    table = oracle_table(TASK)
    res = evaluate(
        models=["oracle"],
        tasks=[TASK],
        decodings=["greedy"],
        n_boot=50,
        cache_dir=tmp_path,
        backend_factory=lambda s: FakeBackend(lambda r: table[r.prompt], name=s),
    )
    assert res.paired is None
    assert "Paired differences" not in markdown_report(res)
