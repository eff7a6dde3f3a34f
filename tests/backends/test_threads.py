"""torch's CPU threads of in-process models: `--threads` (and `evaluate(threads=...)`),
else the rule of `hakari.backends.cpu`; checked before any model loads, applied when a
transformers model loads, recorded as `config.threads` in results.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hakari import evaluate
from hakari.backends import cpu
from hakari.backends.cpu import (
    BUSY_CPUS,
    CpuSample,
    busy_at_start,
    check_threads,
    choose_wait_policy,
    default_threads,
    others_busy,
    sample_cpus,
    usable_cpus,
    wait_policy,
)
from hakari.backends.fake import FakeBackend
from hakari.errors import HakariInputError


@pytest.mark.parametrize("bad", [0, -1, 10**6, 2.5, True, "2"])
def test_a_thread_count_outside_the_machine_is_one_line(bad: object) -> None:
    with pytest.raises(HakariInputError) as refused:
        check_threads(bad)
    assert refused.value.field == "--threads"


def test_the_default_is_within_the_cpus_this_process_may_use() -> None:
    assert 1 <= default_threads() <= usable_cpus()
    assert check_threads(default_threads()) == default_threads()
    assert check_threads(None) is None  # not given: the rule decides


@pytest.mark.parametrize(
    ("given", "expected"),
    [("1", 1), (" 1 ", 1), ("", None), ("0", None), ("two", None), ("-1", None), ("1.5", None)],
)
def test_the_default_follows_omp_num_threads_where_it_is_a_positive_count(
    given: str, expected: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", given)
    assert default_threads() == (expected or usable_cpus())
    monkeypatch.setenv("OMP_NUM_THREADS", "100000")  # more than the machine: its CPUs
    assert default_threads() == max(os.cpu_count() or 1, usable_cpus())


def test_evaluate_refuses_bad_threads_before_any_model(tmp_path: Path) -> None:
    def never(spec: str) -> FakeBackend:
        raise AssertionError("a model was made before the bad option was reported")

    with pytest.raises(HakariInputError) as refused:
        evaluate("fake:x", "demo_sentiment_en", threads=0, backend_factory=never, limit=1)
    assert refused.value.field == "--threads"


def test_a_run_without_an_in_process_model_records_no_threads(tmp_path: Path) -> None:
    results = evaluate(
        "fake:positive", "demo_sentiment_en", limit=2, n_boot=0, cache_dir=tmp_path, threads=1
    )
    assert "threads" not in results.config.to_dict()


@pytest.mark.slow
def test_threads_reach_torch_and_results_json(tiny_random_folder: Path, tmp_path: Path) -> None:
    """In a fresh process (torch's threads are the process's): `--threads 1` is what
    torch computes with once the model loaded, and what results.json records; without
    it, the rule's number."""
    run = [
        sys.executable, "-m", "hakari", "run", "--model", f"hf:{tiny_random_folder}",
        "--tasks", "demo_sentiment_en", "--limit", "1", "--decoding", "greedy",
        "--n-boot", "0", "--cache-dir", str(tmp_path / "cache"), "--quiet",
    ]  # fmt: skip
    # neither variable of the caller (a parallel test worker sets both): the rule's own
    # number is the usable CPUs
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    for given, expected in ((["--threads", "1"], 1), ([], usable_cpus())):
        out = tmp_path / f"run-{expected}-{len(given)}"
        done = subprocess.run(
            [*run, *given, "--output", str(out)], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr[-2000:]
        config = json.loads((out / "results.json").read_text())["config"]
        assert config["threads"] == expected
        # the command's choice from what else ran as it started (the other test worker)
        busy = config["cpu_busy_at_start"]
        assert config["omp_wait_policy"] == ("passive" if busy >= BUSY_CPUS else "unset")
    probe = (
        "import torch\n"
        "from hakari.backends.registry import load_backend\n"
        f"load_backend({f'hf:{tiny_random_folder}'!r}, device='cpu', threads=1)\n"
        "print(torch.get_num_threads())\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.split()[-1] == "1", done.stderr[-2000:]


def test_the_wait_policy_is_chosen_by_other_work_never_over_the_users(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PASSIVE where other work kept the CPUs busy (at least `BUSY_CPUS`) while the
    command started, OpenMP's own where it did not, PASSIVE where the system cannot say;
    nothing where torch is loaded (OpenMP read the variable already) or the user set a
    policy, even empty, which is kept and recorded as it is."""
    start = CpuSample(busy_s=100.0, own_s=1.0, at=50.0)

    def ended(busy_s: float, own_s: float) -> None:  # the sample at the decision, 1 s on
        monkeypatch.setattr(cpu, "sample_cpus", lambda: CpuSample(busy_s, own_s, 51.0))

    monkeypatch.setattr(cpu.time, "monotonic", lambda: 51.0)
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # as before torch loads
    for busy_s, own_s, policy, busy in (
        (100.9, 1.9, "unset", 0.0),  # the CPUs' busy time was this process's own
        (101.8, 1.9, "passive", 0.9),  # a busy loop's worth beside it
        (100.5, 1.0, "passive", 0.5),
        (100.4, 1.0, "unset", 0.4),
    ):
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
        ended(busy_s, own_s)
        choose_wait_policy(start)
        assert (wait_policy(), busy_at_start()) == (policy, busy)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    choose_wait_policy(None)  # no /proc/stat at the start: the safe side
    assert wait_policy() == "passive"
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    ended(200.0, 1.0)
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were loaded
    choose_wait_policy(start)
    assert wait_policy() == "unset"
    for users, recorded in (("ACTIVE", "active"), ("", "unset")):
        monkeypatch.setenv("OMP_WAIT_POLICY", users)
        choose_wait_policy(start)
        assert wait_policy() == recorded


def test_others_busy_subtracts_this_process_and_is_never_negative() -> None:
    start = CpuSample(busy_s=10.0, own_s=2.0, at=0.0)
    assert others_busy(start, CpuSample(11.5, 2.5, 1.0)) == pytest.approx(1.0)
    assert others_busy(start, CpuSample(10.0, 2.5, 1.0)) == 0.0  # tick rounding
    assert others_busy(start, CpuSample(12.0, 2.0, 0.0)) == 0.0  # no window


def test_a_busy_loop_beside_this_process_reads_as_busy() -> None:
    """The real /proc/stat: a child spinning on this process's CPUs for the window."""
    start = sample_cpus()
    if start is None:
        pytest.skip("this system has no /proc/stat")
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        begin = sample_cpus()
        import time

        time.sleep(0.5)
        end = sample_cpus()
    finally:
        spin.kill()
        spin.wait()
    assert begin is not None and end is not None
    assert others_busy(begin, end) >= BUSY_CPUS
