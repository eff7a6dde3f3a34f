"""Hostile conditions for `hakari analyze RUN`: it writes into a run folder, so it holds
the folder's lock, and a folder another command is writing is one `error:` line (exit 2)
before any model loads.

Hostile input to `hakari analyze RUN_DIR --judge SPEC`: each case is one `error:` line
naming the file or option (exit code 2) before the judge loads; no option is silently
replaced by another value."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hakari.cli import app
from tests.helpers.cli import assert_one_line
from tests.helpers.outputs import finished_run, run_in_flight

runner = CliRunner()


@pytest.mark.slow
def test_analyze_while_a_run_writes_the_folder_is_refused(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    run = finished_run(tmp_path / "run")
    with run_in_flight(run, tmp_path / "cache"):
        result = CliRunner().invoke(app, ["analyze", str(run), "--judge", "fake:x"])
        assert_one_line(result.exit_code, result.output, str(run), "another hakari command")
    assert not no_model_loads
    assert not (run / "analysis.json").exists()


def analyze(run: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["analyze", str(run), "--judge", "smollm2-135m", *args])
    return result.exit_code, result.output


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return finished_run(tmp_path / "run")


def test_a_scoring_prompt_is_refused_not_replaced(run: Path, no_model_loads: list[str]) -> None:
    """`--judge-prompt ifteval_pair` was silently swapped for error_analysis."""
    code, out = analyze(run, "--judge-prompt", "ifteval_pair")
    assert_one_line(code, out, "--judge-prompt", "ifteval_pair", "error-analysis")
    assert not no_model_loads


ANALYSIS_PROMPT = {
    "id": "mine",
    "version": 1,
    "source": "test",
    "kind": "analysis",
    "verdict": "free_text",
    "scale": [0, 0],
    "max_new_tokens": 64,
    "template": "Mistakes of a {{task}} model:\n{{examples}}",
    "example": "<ex>{{prompt}} -> {{response}} (gold {{reference}})</ex>",
    "delimiters": ["<\\s*/?\\s*ex\\s*>"],
}

PROMPT_CASES = {
    "example-unknown-placeholder": ({"example": "{{promt}} -> {{response}}"}, ["{{promt}}"]),
    "no-examples-placeholder": ({"template": "Mistakes of a {{task}} model:"}, ["{{examples}}"]),
    "no-example-template": ({"example": None}, ["example"]),
    "max-new-tokens-zero": ({"max_new_tokens": 0}, ["max_new_tokens"]),
}


@pytest.mark.parametrize("case", sorted(PROMPT_CASES))
def test_analysis_prompt_files_are_checked_before_the_judge_loads(
    tmp_path: Path, run: Path, no_model_loads: list[str], case: str
) -> None:
    change, needles = PROMPT_CASES[case]
    data = {k: v for k, v in {**ANALYSIS_PROMPT, **change}.items() if v is not None}
    prompt = tmp_path / "analysis.yaml"
    prompt.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert_one_line(*analyze(run, "--judge-prompt", str(prompt)), "analysis.yaml", *needles)
    assert not no_model_loads


def test_the_default_prompt_gets_to_the_judge(run: Path, no_model_loads: list[str]) -> None:
    runner.invoke(app, ["analyze", str(run), "--judge", "smollm2-135m"])
    assert no_model_loads == ["smollm2-135m"]
