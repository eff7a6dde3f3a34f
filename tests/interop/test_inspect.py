"""The inspect_ai reader on logs written by inspect_ai's own writer (skipped where
inspect_ai, the optional `hakari[interop]` dependency, is not installed; the producers'
venv has it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hakari.interop.api import import_run
from hakari.interop.finish import Settings
from hakari.interop.options import ImportOptions
from tests.helpers.paths import FIXTURES

pytest.importorskip("inspect_ai", reason="inspect_ai (hakari[interop]) is not installed")
LOGS = FIXTURES / "interop" / "inspect"


@pytest.mark.parametrize("templates", ["arg:prompt", "metadata:template"])
def test_templates_by_task_argument_or_sample_metadata(tmp_path: Path, templates: str) -> None:
    run, results = import_run(
        "inspect", [LOGS], tmp_path / "run", ImportOptions(templates=templates), Settings(n_boot=50)
    )
    dec = results.models["mockllm/model"].tasks["demo"].decodings["generate"]
    assert {t: r.metrics for t, r in dec.templates.items()} == {
        "p0": {"match": 5 / 6, "includes": 5 / 6},
        "p1": {"match": 4 / 6, "includes": 4 / 6},
    }
    assert results.imported.producers["inspect_ai"]
    text = run.read_text() + (run.parent / "samples.jsonl").read_text()
    assert "sk-abcdefghijklmnop1234" not in text
    first = json.loads((run.parent / "samples.jsonl").read_text().splitlines()[0])
    assert (first["prompt"], first["output"], first["gold"]) == ("Compute 2+2.", "4", "4")


def test_a_task_argument_the_logs_lack(tmp_path: Path) -> None:
    from hakari.errors import HakariInputError

    with pytest.raises(HakariInputError, match="no argument 'variant'"):
        import_run("inspect", [LOGS], tmp_path / "run", ImportOptions(templates="arg:variant"))
