"""A long model spec in the terminal summary (issue 38 §11): a folder path folded the
summary's first column into seven lines at 80 columns. The summary now shows a readable
label on one line, no two alike, and the full spec beside it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from hakari.reports.labels import model_labels, short_label
from hakari.reports.terminal import print_summary
from hakari.results import EvalResults
from tests.helpers.report_fixtures import HONEST, PARROT, tied_pair_run

FOLDER = "hf:/home/someone/checkpoints/sft-llama-3.1-8b/run-2026-11-20/final"
SERVER = "openai:Qwen/Qwen2.5-7B-Instruct@http://gpu-node-17.cluster.internal:8000/v1"


@pytest.fixture(scope="module")
def tied_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tied_pair_run(tmp_path_factory.mktemp("tied"))


def renamed(run: Path, names: dict[str, str]) -> EvalResults:
    text = (run / "results.json").read_text(encoding="utf-8")
    for old, new in names.items():
        text = text.replace(json.dumps(old), json.dumps(new))
    return EvalResults.from_data(json.loads(text), source="results.json")


def summary_lines(results: EvalResults, width: int = 80) -> list[str]:
    out = io.StringIO()
    print_summary(results, Console(file=out, width=width))
    return [line.rstrip() for line in out.getvalue().splitlines()]


def test_a_folder_path_gets_one_line_and_its_full_spec_beside(tied_run: Path) -> None:
    lines = summary_lines(renamed(tied_run, {PARROT: FOLDER, HONEST: SERVER}))
    assert all(len(line) <= 80 for line in lines)
    rule = next(i for i, line in enumerate(lines) if "────" in line)
    rows = [line.split()[0] for line in lines[rule + 1 : rule + 7]]
    # each model's label on one line, then its metrics: nothing folded
    assert rows[1:3] == rows[4:6] == ["accuracy", "mcc"], "\n".join(lines)
    assert rows[0].startswith("…/") and rows[0].endswith("final")
    assert rows[3].startswith("Qwen2.")
    assert f"  {rows[0]} = {FOLDER}" in lines
    assert SERVER in " ".join(lines)


def test_short_specs_stay_as_they_are(tied_run: Path) -> None:
    lines = summary_lines(renamed(tied_run, {}))
    assert " parrot-1b" in lines and " honest-1b" in lines
    assert not any(line.endswith((f"= {PARROT}", f"= {HONEST}")) for line in lines)


@pytest.mark.parametrize(
    ("spec", "wide", "narrow"),
    [
        (FOLDER, "…/run-2026-11-20/final", "…/final"),
        (SERVER, "Qwen/Qwen2.5-7B-Instruct", "Qwen2.…truct"),
        ("hf:Qwen/Qwen2.5-0.5B-Instruct@0123abcd", "Qwen/Qwen2.5-0.5B-Instruct", "Qwen2.…truct"),
        ("smollm2-135m+adapter:/runs/ft/lora-r16-lr2e", "/runs/ft/lora-r16-lr2e", "lora-r…-lr2e"),
        ("fake:" + "x" * 40, "fake:xxxxxxxxxx…xxxxxxxxxxxxxx", "fake:x…xxxxx"),
        ("smollm2-135m", "smollm2-135m", "smollm2-135m"),
    ],
)
def test_a_label_is_the_readable_part_of_a_spec(spec: str, wide: str, narrow: str) -> None:
    assert (short_label(spec, 30), short_label(spec, 12)) == (wide, narrow)


def test_labels_that_would_be_alike_show_where_the_specs_differ() -> None:
    specs = ["hf:/models/checkpoints/run-1/final", "hf:/models/checkpoints/run-2/final"]
    assert list(model_labels(specs, 12).values()) == ["…run-1/final", "…run-2/final"]
    servers = [f"openai:m@http://{host}:8000/v1" for host in ("gpu-a", "gpu-b")]
    assert list(model_labels(servers, 12).values()) == ["…u-a:8000/v1", "…u-b:8000/v1"]
