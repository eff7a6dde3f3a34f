"""Torch's CPU threads under contention: a fixed slice of the default run at each thread
setting, on a quiet machine and under a background load this script starts itself; wall
and CPU seconds, answers checked equal.

    flock -x /tmp/hakari-cpu.lock .venv/bin/python benchmarks/bench_threads.py \\
        [--limit 4] [--load 4]

Run it under the exclusive lock, so that the background load it starts is the only
load. Each measurement is a fresh `python -m hakari run --no-cache` process (the default
model and tasks, greedy + constrained, `--limit` instances, no bootstrap) on the packaged
model converted beforehand. The settings:

* `torch default`: `--threads` = the intra-op threads torch takes by itself in a fresh
  process, OpenMP's default wait policy (an idle thread spins before it sleeps);
* `1 thread`: `--threads 1`;
* `usable CPUs`: `--threads` = `len(os.sched_getaffinity(0))`, the CPUs this process may
  run on (fewer than the machine's in a container with a CPU set);
* `usable CPUs, passive wait`: the same with `OMP_WAIT_POLICY=PASSIVE` (an idle OpenMP
  thread sleeps at once: it gives its CPU to other work instead of spinning on it);
* `hakari default`: no option, whatever this tree's rule chooses (`config.threads` and
  `config.omp_wait_policy` in results.json say what it was).

The first three set `OMP_WAIT_POLICY` empty (OpenMP's own policy): the `hakari` command
sets PASSIVE only where the variable is not set at all.

The background load is `--load` processes that spin in Python (busy loops), started
before each loaded measurement and stopped after it; each stops by itself after
`--load-seconds`, so an interrupted benchmark leaves none running for long. The
settings run interleaved, quiet first. Answers: every sample's output against the first
setting's quiet run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from timing import REPO, add_smoke_flag

SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


@dataclass
class Setting:
    name: str
    threads: int | None  # None: hakari's own default
    env: dict[str, str] = field(default_factory=dict)


def torch_default_threads() -> int:
    """The intra-op threads torch takes in a fresh process, left alone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    code = "import torch; print(torch.get_num_threads())"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    return int(done.stdout.strip())


def settings() -> list[Setting]:
    usable = len(os.sched_getaffinity(0))
    return [
        Setting("torch default", torch_default_threads(), {"OMP_WAIT_POLICY": ""}),
        Setting("1 thread", 1, {"OMP_WAIT_POLICY": ""}),
        Setting("usable CPUs", usable, {"OMP_WAIT_POLICY": ""}),
        Setting("usable CPUs, passive wait", usable, {"OMP_WAIT_POLICY": "PASSIVE"}),
        Setting("hakari default", None),
    ]


@dataclass
class Measured:
    wall: float
    cpu: float
    threads: int | None  # config.threads of the run
    outputs: dict[tuple[str, str, str, int], str]


def run_once(setting: Setting, limit: int, out: Path, extra: list[str]) -> Measured:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")} | setting.env
    env["PYTHONPATH"] = str(REPO / "src")
    command = [sys.executable, "-m", "hakari", "run", "--no-cache", "--quiet", "--n-boot", "0",
               "--limit", str(limit), "--output", str(out)]  # fmt: skip
    if setting.threads is not None:
        command += ["--threads", str(setting.threads)]
    command += extra
    log = out.parent / f"{out.name}.log"
    with log.open("wb") as err:
        started = time.perf_counter()
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{setting.name}: hakari run failed:\n{log.read_text()[-2000:]}")
    results = json.loads((out / "results.json").read_text())
    outputs = {}
    with (out / "samples.jsonl").open() as lines:
        for line in lines:
            s = json.loads(line)
            outputs[(s["task"], s["decoding"], s["template_id"], s["index"])] = s["output"]
    return Measured(
        wall, usage.ru_utime + usage.ru_stime, results["config"].get("threads"), outputs
    )


def start_load(n: int, seconds: float) -> list[subprocess.Popen[bytes]]:
    spin = SPIN.format(seconds=seconds)
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(n)]


def stop_load(load: list[subprocess.Popen[bytes]]) -> None:
    for proc in load:
        proc.kill()
    for proc in load:
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=4, help="instances of each default task")
    parser.add_argument(
        "--load",
        type=int,
        default=2 * len(os.sched_getaffinity(0)),
        help="busy-loop processes of the loaded runs (default: 2 per usable CPU)",
    )
    parser.add_argument("--load-seconds", type=float, default=900.0)
    add_smoke_flag(parser)
    args = parser.parse_args()
    extra: list[str] = []
    chosen = settings()
    if args.smoke:  # one setting (`--threads` and its environment), one task's short answers
        args.limit, args.load, args.load_seconds = 1, 1, 120.0
        chosen = [chosen[1]]
        extra = ["--tasks", "demo_sentiment_en", "--decoding", "constrained"]
    work = Path(tempfile.mkdtemp(prefix="bench-threads-"))
    measured: dict[tuple[str, str], Measured] = {}
    loads: dict[str, list[float]] = {"quiet": [], "loaded": []}
    try:
        for condition in ("quiet", "loaded"):
            for setting in chosen:
                load = start_load(args.load, args.load_seconds) if condition == "loaded" else []
                try:
                    time.sleep(1.0 if load else 0.0)  # the spinners running first
                    out = work / f"{condition}-{chosen.index(setting)}"
                    measured[(setting.name, condition)] = run_once(setting, args.limit, out, extra)
                    loads[condition].append(os.getloadavg()[0])
                finally:
                    stop_load(load)
                m = measured[(setting.name, condition)]
                print(f"  {condition} · {setting.name}: {m.wall:.1f} s wall, {m.cpu:.1f} s CPU",
                      flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(args, chosen, measured, loads)


def report(
    args: argparse.Namespace,
    chosen: list[Setting],
    measured: dict[tuple[str, str], Measured],
    loads: dict[str, list[float]],
) -> None:
    first = measured[(chosen[0].name, "quiet")]
    n = len(first.outputs)
    print(
        f"\nthe default run's slice (--limit {args.limit}: {n} answers), one fresh process "
        f"each; loaded = {args.load} busy-loop processes beside it; "
        f"{len(os.sched_getaffinity(0))} usable CPUs; 1-min load average at each end: "
        f"quiet {max(loads['quiet']):.1f} at most, loaded {min(loads['loaded']):.1f}–"
        f"{max(loads['loaded']):.1f}"
    )
    print("\n| setting | threads | quiet wall s | quiet CPU s | loaded wall s | loaded CPU s "
          "| loaded wall / quiet | same outputs |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    best_quiet = min(measured[(s.name, "quiet")].wall for s in chosen)
    best_loaded = min(measured[(s.name, "loaded")].wall for s in chosen)
    for s in chosen:
        quiet, loaded = measured[(s.name, "quiet")], measured[(s.name, "loaded")]
        same = sum(
            quiet.outputs.get(k) == v and loaded.outputs.get(k) == v
            for k, v in first.outputs.items()
        )
        env = ", " + ", ".join(f"{k}={v}" for k, v in s.env.items()) if s.env else ""
        print(
            f"| {s.name} | {quiet.threads}{env} "
            f"| {quiet.wall:.1f} ({quiet.wall / best_quiet:.2f}×) "
            f"| {quiet.cpu:.1f} | {loaded.wall:.1f} ({loaded.wall / best_loaded:.2f}×) "
            f"| {loaded.cpu:.1f} | {loaded.wall / quiet.wall:.2f}× | {same}/{n} |"
        )
    print("\n(×: against the fastest setting of that condition)")


if __name__ == "__main__":
    main()
