"""The README's main job, end to end with the real packaged model (a few instances)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hakari.cli import app


@pytest.mark.slow
def test_default_run_with_the_packaged_model(smollm2_folder: Path, tmp_path: Path) -> None:
    cache = smollm2_folder.parent.parent  # the session cache holding the converted model
    args = ["run", "--limit", "2", "--n-boot", "100", "--cache-dir", str(cache)]
    first = CliRunner().invoke(app, [*args, "--output", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    tasks = results["models"]["smollm2-135m"]["tasks"]
    assert set(tasks) == {"demo_sentiment_en", "demo_sentiment_ja"}
    for task in tasks.values():
        for decoding in ("greedy", "constrained"):
            dec = task["decodings"][decoding]
            assert len(dec["templates"]) == 6
            assert all(t["n"] == 2 for t in dec["templates"].values())
            agg = dec["aggregate"]["accuracy"]
            assert agg["min"] <= agg["mean"] <= agg["max"]
            assert agg["sharpe"] == pytest.approx(agg["mean"] / (agg["std"] + 1))
    samples = [json.loads(line) for line in (tmp_path / "a" / "samples.jsonl").open()]
    assert len(samples) == 2 * 2 * 6 * 2
    constrained = [s for s in samples if s["decoding"] == "constrained"]
    for s in constrained:
        assert not s["fallback"], s
        assert re.fullmatch(
            r"[01]|[AB]|positive|negative|yes|no|肯定的|否定的|はい|いいえ", s["output"]
        )

    again = CliRunner().invoke(app, [*args, "--output", str(tmp_path / "b")])
    assert again.exit_code == 0
    rerun = json.loads((tmp_path / "b" / "results.json").read_text())
    for name, task in rerun["models"]["smollm2-135m"]["tasks"].items():
        for decoding, dec in task["decodings"].items():
            assert dec["generated"] == 0 and dec["cached"] == 12
            assert dec["templates"] == tasks[name]["decodings"][decoding]["templates"]
