"""kill -9 or Ctrl-C in the middle of a real run, then the same command again: only the
missing requests are generated, and the metrics equal those of an uninterrupted run; a
kill between two rows' ends loses no row that had ended."""

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
from tests.helpers.paths import REPO

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
@pytest.mark.exclusive
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


# A decoding pool of several batches whose rows end at different steps: 8 instances × 6
# templates × greedy + constrained, 4 prompts a batch (8 rows: a prompt's constrained
# answer often ends with its first token, its greedy one runs on)
POOLED = ["--tasks", "demo_sentiment_en", "--limit", "8", "--batch-size", "4", "--n-boot", "0"]
POOLED_TOTAL = 8 * 6 * 2


def pooled_cmd(model_folder: Path, cache: Path, out: Path) -> list[str]:
    return ["run", "--model", f"hf:{model_folder}", *POOLED, "--cache-dir", str(cache),
            "--output", str(out)]  # fmt: skip


def start_slowed(args: list[str], log: Path) -> subprocess.Popen[str]:
    """`hakari ARGS` with each forward pass slowed to 0.4 s and the rows ended so far
    logged before it (`tests/helpers/slow_steps.py`)."""
    env = os.environ | {"PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.slow_steps", str(log), "0.4", *args],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for_ended_rows(proc: subprocess.Popen[str], log: Path, at_least: int) -> int:
    """Waits (during a forward pass's pause) until at least `at_least` rows have ended;
    the number logged."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        lines = log.read_text().split() if log.exists() else []
        if lines and int(lines[-1]) >= at_least:
            return int(lines[-1])
        time.sleep(0.02)
    raise AssertionError("the run ended, or no rows ended, before it could be stopped")


def counts(out: Path) -> tuple[int, int]:
    """(generated, cached) over the run's decodings."""
    data = json.loads((out / "results.json").read_text())
    decodings = [
        d
        for model in data["models"].values()
        for task in model["tasks"].values()
        for d in task["decodings"].values()
    ]
    return sum(d["generated"] for d in decodings), sum(d["cached"] for d in decodings)


def rerun_resumes_from(model_folder: Path, cache: Path, out: Path, kept: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hakari", *pooled_cmd(model_folder, cache, out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert counts(out) == (POOLED_TOTAL - kept, kept)


@pytest.mark.slow
@pytest.mark.exclusive
def test_kill_between_two_rows_ends_loses_no_ended_row(
    tiny_random_folder: Path, tmp_path: Path
) -> None:
    """kill -9 while rows of the pool's batches have ended and others run on: every row
    that had ended is in the cache (a row is committed in the step it ends, not when the
    last row of its batch does), and the rerun generates only the rest."""
    cache, log = tmp_path / "cache", tmp_path / "ended.log"
    proc = start_slowed(pooled_cmd(tiny_random_folder, cache, tmp_path / "killed"), log)
    ended = wait_for_ended_rows(proc, log, at_least=3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = cached_rows(cache)
    assert ended <= kept < POOLED_TOTAL
    rerun_resumes_from(tiny_random_folder, cache, tmp_path / "resumed", kept)


@pytest.mark.slow
@pytest.mark.exclusive
def test_ctrl_c_keeps_every_ended_row_it_says_it_kept(
    tiny_random_folder: Path, tmp_path: Path
) -> None:
    """Ctrl-C (SIGINT) mid-run: one line saying the answers so far are cached, and they
    are: every row that had ended is in the cache, and the rerun takes them from it."""
    cache, log = tmp_path / "cache", tmp_path / "ended.log"
    proc = start_slowed(pooled_cmd(tiny_random_folder, cache, tmp_path / "stopped"), log)
    ended = wait_for_ended_rows(proc, log, at_least=3)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-2000:]
    assert "generated so far are in the response cache" in stderr, stderr[-2000:]
    kept = cached_rows(cache)
    assert ended <= kept < POOLED_TOTAL
    rerun_resumes_from(tiny_random_folder, cache, tmp_path / "resumed", kept)
