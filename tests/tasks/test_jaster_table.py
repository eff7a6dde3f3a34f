"""scripts/jaster_table.py, which makes docs/results/jaster.md's table: each row's numbers
are the runs' own (the reference template's score and interval, the space's aggregate),
each set on its llm-jp-eval metric, a set missing from a pair's reference run left out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import hakari
from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend
from tests.helpers.paths import REPO, script_module
from tests.tasks.test_jaster import DATASETS, needs_data

pytestmark = needs_data


def _script() -> Any:
    return script_module(REPO / "scripts/jaster_table.py", "jaster_table")


def _run(folder: Path, tasks: list[str], templates: str) -> hakari.EvalResults:
    def answer(request: GenerationRequest) -> str:  # right on some prompts, not all
        return "entailment" if len(request.prompt) % 3 else "東京"

    return hakari.evaluate(
        models=["stand-in"],
        tasks=tasks,
        decodings=["greedy"],
        templates=templates,
        data_dir=DATASETS,
        limit=6,
        n_boot=50,
        use_cache=False,
        output_dir=folder,
        backend_factory=lambda spec: FakeBackend(answer),
    )


def test_the_table_is_the_runs_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reference = _run(tmp_path / "ref", ["jaster:jamp"], "0-4")
    space = _run(tmp_path / "space", ["jaster:jamp", "jaster:niilc"], "space:16")
    assert _script().main([str(tmp_path / "ref"), str(tmp_path / "space" / "results.json")]) == 0
    out, err = capsys.readouterr()
    (row,) = [line for line in out.splitlines() if line.startswith("| `jamp`")]
    template = reference.models["stand-in"].tasks["jamp"].decodings["greedy"].templates["0-4"]
    agg = space.models["stand-in"].tasks["jamp"].decodings["greedy"].aggregate
    metric = "llmjp_exact_match"  # NLI's metric in llm-jp-eval's categories
    ci = template.ci[metric] if template.ci else None
    assert ci is not None
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:3] == ["`jamp`", "stand-in", metric]
    assert cells[3] == f"`0-4` {template.metrics[metric]:.3f} [{ci.low:.3f}, {ci.high:.3f}]"
    a = agg[metric]
    assert cells[4] == f"{a.mean:.3f} [{a.ci_low:.3f}, {a.ci_high:.3f}]"
    assert cells[6] == f"{a.sharpe:.3f} [{a.sharpe_ci_low:.3f}, {a.sharpe_ci_high:.3f}]"
    assert cells[7:] == [f"{a.min:.3f}–{a.max:.3f}", "16"]
    assert "niilc · stand-in: not in both runs" in err
    # a set whose space has not run: its reference row, the space's columns empty
    assert _script().main([str(tmp_path / "ref"), "-"]) == 0
    out, _ = capsys.readouterr()
    (alone,) = [line for line in out.splitlines() if line.startswith("| `jamp`")]
    assert alone.startswith(row[: row.index(cells[3]) + len(cells[3])])
    assert alone.endswith("| – | – | – | – | – |")
    with pytest.raises(SystemExit):  # a pair starts with its reference run
        _script().main(["-", str(tmp_path / "ref")])
    with pytest.raises(SystemExit):  # runs come in pairs
        _script().main([str(tmp_path / "ref")])
    capsys.readouterr()
    (tmp_path / "not-a-run.json").write_text('{"x": 1}', encoding="utf-8")
    (tmp_path / "meta.json").write_text('{"levels": {}}', encoding="utf-8")  # a meta-evaluation
    for bad in (tmp_path / "missing", tmp_path / "not-a-run.json", tmp_path / "meta.json"):
        assert _script().main([str(tmp_path / "ref"), str(bad)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("error: ") and err.count("\n") == 1
