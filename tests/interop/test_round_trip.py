"""A native run exported to each format and imported back gives byte-identical statistics
(the same seed, alpha and replicates): per-template scores and intervals, aggregates,
attribution, paired verdicts, the alpha sweep. The run is the golden run (two fake models,
a label, a number and a text task, three decodings, a seeded sample)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hakari.interop.api import export_run, import_run
from hakari.interop.finish import Settings
from tests.helpers import golden_run
from tests.helpers.cli import succeed
from tests.helpers.interop import statistics
from tests.helpers.producers import eee_validate, missing_eee_venv, validation_warnings

SETTINGS = Settings(alpha=1.0, n_boot=40, seed=7)  # the golden run's


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("native")
    golden_run.run(root / "run", root / "cache")
    return root / "run"


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_table_round_trip_is_byte_identical(native: Path, tmp_path: Path, suffix: str) -> None:
    table = tmp_path / f"table{suffix}"
    export_run(native, "table", table)
    back, _ = import_run("table", [table], tmp_path / "back", settings=SETTINGS)
    assert statistics(back) == statistics(native / "results.json")


def test_eee_round_trip_is_byte_identical(native: Path, tmp_path: Path) -> None:
    export_run(native, "eee", tmp_path / "eee")
    back, _ = import_run("eee", [tmp_path / "eee"], tmp_path / "back", settings=SETTINGS)
    assert statistics(back) == statistics(native / "results.json")


def test_round_trip_through_the_commands(native: Path, tmp_path: Path) -> None:
    """The same from the command line; the imported run is a normal run for `report`
    and for a second export (the same rows again, in the import's order: templates in
    the run's order, items sorted)."""
    table = tmp_path / "t.csv"
    succeed(["export", str(native), "--format", "table", "--output", str(table)])
    succeed(
        [
            "import",
            "table",
            str(table),
            "--output",
            str(tmp_path / "back"),
            "--n-boot",
            "40",
            "--seed",
            "7",
        ]
    )
    assert statistics(tmp_path / "back" / "results.json") == statistics(native / "results.json")
    succeed(["report", str(tmp_path / "back"), "--markdown"])
    again = tmp_path / "again.csv"
    succeed(["export", str(tmp_path / "back"), "--format", "table", "--output", str(again)])
    assert sorted(again.read_text().splitlines()) == sorted(table.read_text().splitlines())
    # `hakari score` adds a metric to the imported run and keeps its provenance
    succeed(["score", str(tmp_path / "back"), "--metrics", "rouge1"])
    scored = json.loads((tmp_path / "back" / "results.json").read_text())
    assert scored["imported"]["source"] == "table"
    task = scored["models"]["steady"]["tasks"]["demo_sentiment_en"]["decodings"]["greedy"]
    assert "rouge1" in task["rescored"]


def test_eee_records_pass_the_every_eval_ever_validator(native: Path, tmp_path: Path) -> None:
    """every_eval_ever 0.3.0's own validator (its CLI, in the venv of
    scripts/install-eee.sh: it needs Python >= 3.12) finds every exported file valid. Its
    only warnings are that the golden run's fake models, `steady` and `shaky`, name no
    developer (no `org/`): a hub id names one, and then it warns of nothing
    (tests/e2e/test_producers.py)."""
    reason = missing_eee_venv()
    if reason:
        pytest.skip(reason)
    root = tmp_path / "eee"
    export_run(native, "eee", root)
    reports = eee_validate(root, log=tmp_path / "validate.log")
    assert len(reports) == len(list(root.rglob("*.json*")))
    for warning in validation_warnings(reports):
        assert "names no datastore directory" in warning and "developer" in warning, warning
