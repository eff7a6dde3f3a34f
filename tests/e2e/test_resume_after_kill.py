"""kill -9 in the middle of a real run, then the same command again: only the missing
requests are generated, and the metrics equal those of an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.cache import cached_rows

TOTAL = 32 * 6  # demo_sentiment_en: 32 instances × 6 templates, greedy only


def hakari_cmd(model_folder: Path, cache: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "hakari", "run",
        "--model", f"hf:{model_folder}",
        "--tasks", "demo_sentiment_en",
        "--decoding", "greedy",
        # batch size 1: outputs cannot depend on which prompts share a batch
        "--batch-size", "1",
        "--n-boot", "0",
        "--cache-dir", str(cache),
        "--output", str(out),
    ]  # fmt: skip


def template_metrics(out: Path) -> dict:
    data = json.loads((out / "results.json").read_text())
    dec = next(iter(data["models"].values()))["tasks"]["demo_sentiment_en"]["decodings"]["greedy"]
    return {"templates": dec["templates"], "generated": dec["generated"], "cached": dec["cached"]}


@pytest.mark.slow
def test_kill_minus_9_then_rerun_resumes(tiny_random_folder: Path, tmp_path: Path) -> None:
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    cache = tmp_path / "cache"
    proc = subprocess.Popen(
        hakari_cmd(tiny_random_folder, cache, tmp_path / "killed"),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 240
    while cached_rows(cache) < 20 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = cached_rows(cache)
    assert 20 <= done_before < TOTAL
    assert not (tmp_path / "killed" / "results.json").exists()

    resumed = subprocess.run(
        hakari_cmd(tiny_random_folder, cache, tmp_path / "resumed"), env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = template_metrics(tmp_path / "resumed")
    assert after["generated"] == TOTAL - done_before
    assert after["cached"] == done_before

    fresh = subprocess.run(
        hakari_cmd(tiny_random_folder, tmp_path / "fresh-cache", tmp_path / "fresh"), env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    uninterrupted = template_metrics(tmp_path / "fresh")
    assert uninterrupted["generated"] == TOTAL
    assert after["templates"] == uninterrupted["templates"]
