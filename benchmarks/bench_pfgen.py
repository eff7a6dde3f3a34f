"""pfgen-bench scoring speed: hakari vs the reference scorer's measured cost.

Each scenario runs in a fresh process (`hakari pfgen score` as a user runs it, startup
included) and reports wall time, CPU time and peak RSS. The reference numbers are the
ones measured on this kind of 2-core machine in ../shared/docs/pfgen-bench.md §4 (the upstream
code is not vendored here).

    .venv/bin/python benchmarks/bench_pfgen.py --data-dir ../shared/pfgen-bench
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from timing import add_smoke_flag, skip

REFERENCE = {  # ../shared/docs/pfgen-bench.md §4 (upstream pfgen_eval.py)
    "build tables": ("(rebuilt every run)", "≈145 s CPU", "–"),
    "1 model, 100 trials": ("2:46.6", "171.6 s", "≈6.7 GB (Σ workers)"),
    "15 models": ("4:14.0", "279.2 s", "≈7.8 GB (Σ workers)"),
}


def child(args: list[str]) -> None:
    """Run the CLI in this process, then print its cost as JSON on the last line."""
    from hakari.cli.pfgen import app

    start = time.perf_counter()
    try:
        app(args, standalone_mode=False)
    finally:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(
            json.dumps(
                {
                    "wall": time.perf_counter() - start,
                    "cpu": usage.ru_utime + usage.ru_stime,
                    "rss_mb": usage.ru_maxrss / 1024,
                }
            )
        )


def run(args: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    cost = json.loads(proc.stdout.strip().splitlines()[-1])
    cost["process_wall"] = time.perf_counter() - started  # interpreter start and imports too
    return cost


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/pfgen-bench"))
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: a fresh folder")
    add_smoke_flag(parser)
    args = parser.parse_args()
    trials = sorted((args.data_dir / "result").glob("*/*/*/trials.jsonl.xz"))
    one = next((p for p in trials if "plamo-2-8b" in str(p)), None)
    if one is None:
        skip(f"no pfgen-bench trials under {args.data_dir}/result (--data-dir)")
    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="bench-pfgen-"))
    if args.cache_dir is None:  # a cache of its own (149 MB of tables) goes when it ends
        atexit.register(shutil.rmtree, cache, True)
    boot = "100" if args.smoke else "10000"
    common = ["--data-dir", str(args.data_dir), "--cache-dir", str(cache), "--bootstrap", boot]
    scenarios = [
        ("build tables", ["score", str(one), *common]),  # cold cache: builds, then scores
        ("1 model, 100 trials", ["score", str(one), *common]),
        ("15 models", ["score", *map(str, trials), *common]),
    ][: 1 if args.smoke else None]
    table = Table(title="pfgen-bench scoring (this machine)")
    for name in ("scenario", "hakari wall", "hakari CPU", "hakari peak RSS", "reference wall",
                 "reference CPU", "reference memory"):  # fmt: skip
        table.add_column(name, justify="left" if name == "scenario" else "right")
    for name, cli_args in scenarios:
        cost = run(cli_args)
        ref = REFERENCE[name]
        label = name + (" (cold cache, then 1 model)" if name == "build tables" else "")
        table.add_row(
            label,
            f"{cost['process_wall']:.1f} s",
            f"{cost['cpu']:.1f} s",
            f"{cost['rss_mb']:.0f} MB",
            *ref,
        )
    Console(width=150).print(table)
    if args.cache_dir is not None:
        print(f"n-gram table cache: {cache}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        main()
