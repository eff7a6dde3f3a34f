"""Every benchmark script in its `--smoke` mode, each in a fresh process: proves that
each still starts and runs end to end (imports, paths, helpers) after a change elsewhere,
in seconds each. Not a measurement: the numbers of a smoke run mean nothing.

    PYTHONPATH=src python benchmarks/smoke.py [bench_report ...]

A script that needs what this machine lacks (a GPU, the vLLM venv, lm-eval, data under
../shared) exits with `timing.SKIP_EXIT` and says why; it is reported as skipped. Exit
status 1 when any script failed or ran past its time limit.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from timing import REPO, SKIP_EXIT

HERE = Path(__file__).resolve().parent
LIMIT_S = 600  # a hung script, not a slow one: seconds of CPU, longer on a loaded machine


def scripts(names: list[str]) -> list[Path]:
    every = sorted(HERE.glob("bench_*.py"))
    if not names:
        return every
    chosen = [p for p in every if p.stem in names or p.name in names]
    unknown = set(names) - {p.stem for p in chosen} - {p.name for p in chosen}
    if unknown:
        raise SystemExit(f"no benchmark named {', '.join(sorted(unknown))} in {HERE}")
    return chosen


def child_cpu() -> float:
    """CPU seconds (user + system) of the waited-for child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(script: Path) -> tuple[str, float, str]:
    """(status, wall seconds, the last lines of its output when it did not pass)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, str(script), "--smoke"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "TIMEOUT", time.perf_counter() - started, f"over {LIMIT_S} s"
    seconds = time.perf_counter() - started
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
    if done.returncode == 0:
        return "ok", seconds, ""
    if done.returncode == SKIP_EXIT:
        said = done.stderr.strip().splitlines()
        return "skipped", seconds, said[-1] if said else "(no reason given)"
    return f"FAILED ({done.returncode})", seconds, tail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only these scripts (default: every bench_*.py)")
    parser.add_argument(
        "--skip", default="", metavar="NAME,...", help="leave these scripts out (said in the table)"
    )
    args = parser.parse_args()
    skip = [name for name in args.skip.split(",") if name]
    left_out = {p.stem for p in scripts(skip)} if skip else set()  # an unknown name: an error
    failed = []
    started = time.perf_counter()
    print(f"{'script':28} {'status':12} {'wall s':>7} {'CPU s':>6}")
    for script in scripts(args.names):
        if script.stem in left_out:
            print(f"{script.name:28} {'left out':12} {'':>7} {'':>6}  --skip", flush=True)
            continue
        cpu = child_cpu()
        status, seconds, detail = run(script)
        cpu = child_cpu() - cpu
        why = detail if status == "skipped" else ""
        print(f"{script.name:28} {status:12} {seconds:7.1f} {cpu:6.1f}  {why}", flush=True)
        if status not in ("ok", "skipped"):
            failed.append(script.name)
            print("    " + detail.replace("\n", "\n    "), flush=True)
    load = os.getloadavg()[0]
    print(
        f"total {time.perf_counter() - started:.0f} s wall, {child_cpu():.0f} s CPU, "
        f"load average {load:.1f}"
    )
    if failed:
        raise SystemExit(f"benchmarks that failed their smoke run: {', '.join(failed)}")


if __name__ == "__main__":
    main()
