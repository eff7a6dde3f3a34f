"""A prompt space in the views: the per-dimension table and the percentiles in the terminal
and Markdown reports, one chart per dimension in the HTML page, and its record in
results.json (read back byte for byte)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

import hakari
from hakari import aggregate as agg
from hakari.aggregate.dimensions import summarize
from hakari.reports.inputs import load_inputs
from hakari.reports.markdown import markdown_report, md_cell
from hakari.reports.page import build_html
from hakari.reports.terminal import print_report
from hakari.results import (
    DecodingResult,
    EvalResults,
    ModelResult,
    RunConfig,
    TaskResult,
    TemplateResult,
)
from hakari.results.space import DimensionEffect
from tests.helpers.paths import SHARED

HOSTILE = "<b>cue</b>"


def _space_results(hostile: str = HOSTILE) -> EvalResults:
    rng = np.random.default_rng(3)
    cues = ["Answer:", hostile, "The answer is"]
    levels = {f"t{t}": {"cue": cues[t % 3], "enumerator": "ABCD" if t < 6 else "1234"}
              for t in range(12)}  # fmt: skip
    skill = {"Answer:": 0.7, hostile: 0.3, "The answer is": 0.6}
    preds = {t: [int(v) for v in rng.random(60) < skill[lv["cue"]]] for t, lv in levels.items()}
    boot = agg.bootstrap(preds, [1] * 60, "accuracy", n_boot=200, seed=0)
    space = summarize(boot.per_template, levels, boot, (0.0, 1.0))
    assert space is not None
    dec = DecodingResult(
        templates={
            t: TemplateResult(metrics={"accuracy": s}, fallback_rate=0.0, n=60, levels=levels[t])
            for t, s in boot.per_template.items()
        },
        aggregate={"accuracy": boot.stats},
        space={"accuracy": space},
    )
    task = TaskResult(
        language="en", n_instances=60, metrics=["accuracy"], decodings={"loglik": dec}
    )
    model = ModelResult(identity={"backend": "fake"}, tasks={"mmlu_x": task})
    return EvalResults(config=RunConfig(), versions={}, models={"fake:m": model})


def test_results_json_keeps_the_space_and_reads_back_unchanged(tmp_path: Path) -> None:
    results = _space_results()
    path = tmp_path / "results.json"
    results.write(path)
    again = EvalResults.read(path)
    assert again.file_text() == path.read_text()
    dec = again.models["fake:m"].tasks["mmlu_x"].decodings["loglik"]
    assert dec.space is not None and set(dec.space["accuracy"].dimensions) == {"cue", "enumerator"}
    assert dec.templates["t0"].levels == {"cue": "Answer:", "enumerator": "ABCD"}


def test_terminal_and_markdown_show_the_dimension_table_and_percentiles() -> None:
    results = _space_results()
    console = Console(record=True, width=200)
    print_report(results, console)
    text = console.export_text()
    assert "what each dimension does" in text
    assert "p5 " in text and "p50 " in text and "p95 " in text
    cue = results.models["fake:m"].tasks["mmlu_x"].decodings["loglik"].space
    assert cue is not None
    effect = cue["accuracy"].dimensions["cue"]
    assert f"{effect.share:.3f} [{effect.share_ci_low:.3f}" in text
    assert effect.best == "Answer:" and effect.worst == HOSTILE
    markdown = markdown_report(results)
    assert "| dimension | share (95% CI) |" in markdown
    assert "| cue |" in markdown and HOSTILE not in markdown  # escaped
    assert "| dimension | level | templates | mean (95% CI) | best / worst |" in markdown
    for lv in effect.levels:  # every level's mean with its interval, in both views
        assert lv.ci_low is not None and lv.ci_high is not None
        cell = f"{lv.mean:.3f} [{lv.ci_low:.3f}, {lv.ci_high:.3f}]"
        assert cell in text and md_cell(cell) in markdown  # brackets escaped there
    assert f"| cue | Answer: | 4 | {md_cell(_level_cell(effect, 'Answer:'))} | best |" in markdown
    assert "each level's mean" in text


def _level_cell(effect: DimensionEffect, level: str) -> str:
    lv = next(lv for lv in effect.levels if lv.level == level)
    return f"{lv.mean:.3f} [{lv.ci_low:.3f}, {lv.ci_high:.3f}]"


def test_html_has_the_dimension_and_level_tables_with_intervals_escaped(tmp_path: Path) -> None:
    script = "<script>alert(1)</script>"
    results = _space_results(hostile=script)
    path = tmp_path / "results.json"
    results.write(path)
    html = build_html(load_inputs([path]))
    space = results.models["fake:m"].tasks["mmlu_x"].decodings["loglik"].space
    assert space is not None
    cue = space["accuracy"].dimensions["cue"]
    assert cue.worst == script
    assert script not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count('<table class="space">') == 2
    assert f"<td class=n>{cue.share:.3f} [{cue.share_ci_low:.3f}, {cue.share_ci_high:.3f}]" in html
    for lv in cue.levels:
        assert f"<td class=n>{_level_cell(cue, lv.level)}</td>" in html
    assert "<td>cue</td><td>&lt;script&gt;alert(1)&lt;/script&gt;</td>" in html


def test_html_has_one_chart_per_dimension_with_text_escaped(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    _space_results().write(path)
    html = build_html(load_inputs([path]))
    assert html.count('<figure class="dimension">') == 2
    assert "what each dimension of the prompt space does" in html
    assert HOSTILE not in html and "&lt;b&gt;cue&lt;/b&gt;" in html
    assert "p95 " in html


def test_runs_without_a_space_show_none_of_it(tmp_path: Path) -> None:
    results = _space_results()
    dec = results.models["fake:m"].tasks["mmlu_x"].decodings["loglik"]
    plain = dec.model_copy(update={"space": None})
    plain.model_fields_set.discard("space")
    results.models["fake:m"].tasks["mmlu_x"].decodings["loglik"] = plain
    assert '"space"' not in results.file_text()
    assert "what each dimension" not in markdown_report(results)
    path = tmp_path / "results.json"
    results.write(path)
    assert '<figure class="dimension">' not in build_html(load_inputs([path]))


@pytest.mark.skipif(not (SHARED / "datasets" / "jmmlu").is_dir(), reason="needs ../shared")
def test_a_run_over_a_space_records_and_shows_what_it_tells(tmp_path: Path) -> None:
    results = hakari.evaluate(
        models=["fake:A"],
        tasks=["jmmlu:marketing"],
        templates="space:12",
        decodings=["loglik"],
        limit=20,
        data_dir=SHARED / "datasets",
        cache_dir=tmp_path / "cache",
        output_dir=tmp_path / "run",
        n_boot=100,
    )
    dec = next(iter(results.models["fake:A"].tasks.values())).decodings["loglik"]
    assert dec.space is not None
    space = dec.space["accuracy"]
    levels = {tid: t.levels for tid, t in dec.templates.items()}
    assert space.n_templates == 12 and all(levels.values())
    assert list(space.dimensions) == list(next(iter(levels.values())) or {})
    again = EvalResults.read(tmp_path / "run" / "results.json")
    assert again.file_text() == (tmp_path / "run" / "results.json").read_text()
    assert "what each dimension does" in _terminal(again)


def _terminal(results: EvalResults) -> str:
    console = Console(record=True, width=200)
    print_report(results, console)
    return console.export_text()


def test_a_fake_run_over_a_space_shows_every_level_in_markdown_and_html(tmp_path: Path) -> None:
    """A run over a task file's space with the `fake:` backend (no ../shared needed): the
    Markdown and HTML reports of its results.json hold every level's mean with the
    interval results.json records."""
    rows = [
        {"q": f"question {i}?", "opts": [f"o{i}{j}" for j in range(4)], "gold": "ABCD"[i % 4]}
        for i in range(16)
    ]
    (tmp_path / "mc.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = tmp_path / "mc.yaml"
    task.write_text(
        f"""
name: mc
language: en
data: {{eval_split: test, splits: {{test: {{file: {tmp_path / "mc.jsonl"}}}}}}}
target: gold
answer_type: choice
choices: {{field: opts, count: 4, gold: letter}}
metrics: [accuracy]
max_new_chars: 4
space:
  question: q
  dimensions:
    instruction: [en_plain, en_none]
    choice_order: [given, reversed, rotated]
    answer_cue: [answer, answer_is]
"""
    )
    hakari.evaluate(
        models=["fake:A"],
        tasks=[str(task)],
        templates="space:all",
        decodings=["greedy"],
        cache_dir=tmp_path / "cache",
        output_dir=tmp_path / "run",
        n_boot=50,
    )
    path = tmp_path / "run" / "results.json"
    results = EvalResults.read(path)
    dec = results.models["fake:A"].tasks["mc"].decodings["greedy"]
    assert dec.space is not None
    space = dec.space["accuracy"]
    assert list(space.dimensions) == ["instruction", "choice_order", "answer_cue"]
    markdown = markdown_report(results)
    html = build_html(load_inputs([path]))
    for dim, effect in space.dimensions.items():
        assert len(effect.levels) == {"choice_order": 3}.get(dim, 2)
        for lv in effect.levels:
            cell = _level_cell(effect, lv.level)
            row = f"| {dim} | {lv.level} | {lv.n_templates} | {md_cell(cell)} |"
            assert row in markdown
            assert f"<td>{dim}</td><td>{lv.level}</td><td class=n>{lv.n_templates}</td>" in html
            assert f"<td class=n>{cell}</td>" in html
