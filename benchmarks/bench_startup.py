"""Start-up cost of the CLI: `hakari --help`, `hakari report RUN` (a small finished run:
the schema read and shown, nothing of the aggregation loaded) and a warm `hakari pfgen
score`, each in a fresh process, against a bare interpreter (`python -c pass`) in the
same run. The pfgen row needs pfgen-bench's data (`--data-dir`); without it it is left out.

With `--before DIR` (another checkout, e.g. a worktree of an older commit) the same
commands run on that tree's `src` too, interleaved with this one's, so the two columns
share the machine's load. The pfgen row also shows the ratio to the upstream scorer's
measured wall time for one 100-trial model (../shared/docs/pfgen-bench.md §4: 2:46.6).

    .venv/bin/python benchmarks/bench_startup.py --data-dir ../shared/pfgen-bench \\
        [--before /path/to/old/checkout] [--repeats 7]
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table
from timing import add_smoke_flag, timed

REPO = Path(__file__).resolve().parents[1]
# a finished run to report: the fake backend (no model), both demo tasks, two decodings
RUN = ["-m", "hakari", "run", "--model", "fake:positive", "--model", "fake:negative",
       "--tasks", "demo_sentiment_en,demo_sentiment_ja", "--decoding", "greedy,constrained",
       "--limit", "20", "--n-boot", "100", "--no-cache"]  # fmt: skip
UPSTREAM_ONE_MODEL_S = 166.6  # reference pfgen_eval.py, one 100-trial model


def run_python(src: Path | None, args: list[str]) -> float:
    """Wall seconds of `python ARGS` in a fresh process with `src` as its PYTHONPATH."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return timed(lambda: subprocess.run(
        [sys.executable, *args], env=env, check=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "pfgen-bench")
    parser.add_argument("--before", type=Path, default=None, help="another checkout to compare")
    parser.add_argument("--repeats", type=int, default=7)
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.repeats = 1
    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    atexit.register(shutil.rmtree, work, True)  # its run folder goes when the script ends
    trees = {"this tree": REPO / "src"}
    if args.before is not None:
        trees["before"] = args.before.resolve() / "src"
    run_python(trees["this tree"], [*RUN, "--output", str(work / "run")])
    commands = {"python -c pass": ["-c", "pass"], "hakari --help": ["-m", "hakari", "--help"],
                "hakari report RUN": ["-m", "hakari", "report", str(work / "run")]}  # fmt: skip
    found = sorted((args.data_dir / "result").glob("*/*/*/trials.jsonl.xz"))
    trials = next((p for p in found if "plamo-2-8b" in str(p)), None)
    if trials is None:
        print(f"no pfgen-bench trials under {args.data_dir}: the pfgen row is left out")
    elif not args.smoke:  # the smoke run leaves out the n-gram tables' first build (~1 min)
        score = ["-m", "hakari", "pfgen", "score", str(trials), "--data-dir", str(args.data_dir),
                 "--cache-dir", str(work / "cache"), "--bootstrap", "10000"]  # fmt: skip
        for src in trees.values():  # build the n-gram tables once per tree: later runs are warm
            run_python(src, score)
        commands["hakari pfgen score (warm)"] = score
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeats):  # interleaved: every tree and command sees the same load
        for name, command in commands.items():
            for tree, src in trees.items():
                times.setdefault((name, tree), []).append(run_python(src, command))
    bare = statistics.median(times[("python -c pass", "this tree")])
    table = Table(title=f"CLI start-up, median of {args.repeats} fresh processes")
    table.add_column("command")
    for tree in trees:
        table.add_column(f"{tree} (s)", justify="right")
        table.add_column("× bare python", justify="right")
    if "before" in trees:
        table.add_column("before / this tree", justify="right")
    table.add_column("upstream scorer / this tree", justify="right")
    for name in commands:
        medians = {tree: statistics.median(times[(name, tree)]) for tree in trees}
        cells = []
        for tree in trees:
            cells += [f"{medians[tree]:.2f}", f"{medians[tree] / bare:.1f}×"]
        if "before" in trees:
            cells.append(f"{medians['before'] / medians['this tree']:.2f}×")
        upstream = "pfgen" in name
        cells.append(f"{UPSTREAM_ONE_MODEL_S / medians['this tree']:.0f}×" if upstream else "")
        table.add_row(name, *cells)
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
