"""The default run (`hakari run`: SmolLM2-135M on the two demo tasks, greedy and
constrained) at other commits against this tree, interleaved in one run, with ratios.

Each variant is a tree of sources (this checkout's `src`, or `git archive REF` of any
commit) and extra `hakari run` options; every run is a fresh `python -m hakari run
--no-cache` process on a packaged model converted beforehand (one untimed warm-up run per
tree), so a run times what a user waits for after the first conversion. The variants run
interleaved (A B C, A B C, ...) so that they share the machine's load; the table gives the
median wall and CPU time (the child's user + system: less sensitive to other work than the
wall clock), each variant's ratio to the first per repeat (median), where the time goes
(each task × decoding's `wall_s` from results.json) and the load average while it ran.
It also times when the first result table reached standard output (a tree that prints
each task's table as it finishes shows it before the run ends; older trees at the end).

Answers are compared too: for every sample (task, decoding, template, instance), the
extracted answer of each variant against the first's, and the outputs (equal, or one a
prefix of the other: a greedy label answer that this tree ended once its label was decided).

    .venv/bin/python benchmarks/bench_default_run.py \\
        --variant release=4c08053~1 --variant main=main \\
        --variant "this tree, batch 8=:--batch-size 8" --variant "this tree=" [--limit 8]

A variant is NAME=REF[:OPTIONS]; an empty REF is this checkout. OPTIONS may start with
environment settings, `VAR=VALUE` (e.g. `:OMP_WAIT_POLICY= --threads 1`; an empty value
sets the variable empty, which the `hakari` command leaves alone). With --keep DIR the
run folders stay there (samples.jsonl of each run).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
from timing import add_smoke_flag

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Variant:
    name: str
    ref: str  # "" = this checkout
    options: list[str]
    env: dict[str, str] = field(default_factory=dict)
    src: Path = REPO / "src"
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    first_tables: list[float] = field(default_factory=list)  # s until the first table
    parts: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    samples: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)


def parse_variant(text: str) -> Variant:
    name, _, rest = text.partition("=")
    ref, _, options = rest.partition(":")
    words = shlex.split(options)
    env: dict[str, str] = {}
    while words and "=" in words[0] and not words[0].startswith("-"):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return Variant(name=name, ref=ref.strip(), options=words, env=env)


def checkout(ref: str, into: Path) -> Path:
    """`git archive REF src` unpacked under `into`: that commit's sources."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "src"], cwd=REPO, check=True, capture_output=True
    ).stdout
    folder = into / ref.replace("/", "_").replace("~", "-")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as tmp:
        tmp.write(archive)
        tmp.seek(0)
        with tarfile.open(fileobj=tmp) as tar:
            tar.extractall(folder, filter="data")
    return folder / "src"


TABLE_TOP = "┏"  # the first line of a rich table with a heavy head: a table is printed


def run_once(
    variant: Variant, out: Path, cache: Path, extra: list[str]
) -> tuple[float, float, float]:
    """One `hakari run` in a fresh process: (wall s, CPU s of the child, s until the
    first result table reached its standard output)."""
    env = {**os.environ, "PYTHONPATH": str(variant.src), "HAKARI_CACHE_DIR": str(cache)}
    env.update(variant.env)
    command = [sys.executable, "-m", "hakari", "run", "--no-cache", "--output", str(out)]
    log = out.parent / f"{out.name}.log"  # a file, not a pipe: progress bars fill pipes
    first_table = float("nan")
    with log.open("wb") as err:
        started = time.perf_counter()
        child = subprocess.Popen(
            [*command, *variant.options, *extra],
            env=env,
            stdout=subprocess.PIPE,  # read as it comes: a pipe never fills
            stderr=err,
            cwd=out.parent,
        )
        assert child.stdout is not None
        for line in child.stdout:
            if first_table != first_table and TABLE_TOP.encode() in line:
                first_table = time.perf_counter() - started
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise SystemExit(f"{variant.name}: hakari run failed ({code}):\n{tail}")
    return wall, usage.ru_utime + usage.ru_stime, first_table


def record(variant: Variant, out: Path, wall: float, cpu: float, first_table: float) -> None:
    variant.walls.append(wall)
    variant.cpus.append(cpu)
    variant.first_tables.append(first_table)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for model in results["models"].values():
        for task, task_result in model["tasks"].items():
            for decoding, dec in task_result["decodings"].items():
                variant.parts[f"{task} · {decoding}"].append(float(dec.get("wall_s", 0.0)))
    with (out / "samples.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            s = json.loads(line)
            key = (s["task"], s["decoding"], s["template_id"], s["index"])
            variant.samples[key] = {"output": s["output"], "answer": s["answer"]}


def compare(first: Variant, other: Variant) -> str:
    same_answer = same_output = prefix = 0
    for key, a in first.samples.items():
        b = other.samples.get(key)
        if b is None:
            continue
        same_answer += a["answer"] == b["answer"]
        same_output += a["output"] == b["output"]
        longer, shorter = sorted((a["output"], b["output"]), key=len, reverse=True)
        prefix += a["output"] != b["output"] and longer.startswith(shorter)
    n = len(first.samples)
    return (
        f"{other.name} vs {first.name}: same answer {same_answer}/{n}, same output "
        f"{same_output}/{n}, one output a prefix of the other {prefix}/{n}"
    )


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", type=parse_variant)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--limit", type=int, help="first N instances of each task (default: all)")
    parser.add_argument("--keep", type=Path, help="keep the run folders here")
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:  # this tree once on one instance, the converted model of HAKARI_CACHE_DIR
        args.variant = args.variant or [parse_variant("this tree=")]
        args.repeats, args.limit = 1, 1
    elif not args.variant:
        parser.error("give at least one --variant NAME=[REF][:OPTIONS]")
    work = Path(tempfile.mkdtemp(prefix="bench-default-run-"))
    try:
        bench(args, work)
    finally:  # source trees, converted models, and the run folders unless --keep
        shutil.rmtree(work, ignore_errors=True)


def bench(args: argparse.Namespace, work: Path) -> None:
    variants: list[Variant] = args.variant
    keep = args.keep or work / "runs"
    keep.mkdir(parents=True, exist_ok=True)
    cache = work / "cache"  # converted models only: every timed run is --no-cache
    if args.smoke:  # reuse the converted model (no untimed conversion run)
        from_env = os.environ.get("HAKARI_CACHE_DIR")
        cache = Path(from_env) if from_env else Path(platformdirs.user_cache_dir("hakari"))
    for variant in variants:
        if variant.ref:
            variant.src = checkout(variant.ref, work / "trees")
    warmed: set[Path] = set()
    for variant in variants if not args.smoke else []:  # the conversion, once a tree, untimed
        if variant.src not in warmed:
            out = work / f"warm-{len(warmed)}"
            run_once(variant, out, cache, ["--limit", "1", "--n-boot", "0"])
            warmed.add(variant.src)
    extra = ["--limit", str(args.limit)] if args.limit else []
    loads = [load()]
    for repeat in range(args.repeats):
        for variant in variants:
            out = keep / f"{variant.name.replace(' ', '_').replace(',', '')}-{repeat}"
            shutil.rmtree(out, ignore_errors=True)
            wall, cpu, first_table = run_once(variant, out, cache, extra)
            record(variant, out, wall, cpu, first_table)
            print(
                f"  {variant.name} #{repeat + 1}: first table at {first_table:.1f} s, "
                f"{wall:.1f} s wall, {cpu:.1f} s CPU",
                flush=True,
            )
        loads.append(load())
    first = variants[0]
    what = f"--limit {args.limit}" if args.limit else "the default run"
    print(f"\n{what}, {args.repeats} interleaved repeats; load average (1/5/15 min) per round:")
    print("  " + " | ".join(loads))
    print(
        "\n| variant | tree | first table s (median) | wall s (median) | CPU s (median) "
        "| first table / first | wall / first | CPU / first |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for v in variants:
        table_ratio = statistics.median(
            a / b for a, b in zip(v.first_tables, first.first_tables, strict=True)
        )
        wall_ratio = statistics.median(a / b for a, b in zip(v.walls, first.walls, strict=True))
        cpu_ratio = statistics.median(a / b for a, b in zip(v.cpus, first.cpus, strict=True))
        settings = [f"{k}={x}" for k, x in v.env.items()]
        tree = " ".join([v.ref or "this checkout", *settings, *v.options])
        print(
            f"| {v.name} | {tree} | {statistics.median(v.first_tables):.1f} | "
            f"{statistics.median(v.walls):.1f} | {statistics.median(v.cpus):.1f} | "
            f"{table_ratio:.2f}× | {wall_ratio:.2f}× | {cpu_ratio:.2f}× |"
        )
    print("\nwhere the time goes (results.json wall_s, median s):\n")
    parts = list(dict.fromkeys(p for v in variants for p in v.parts))
    print("| task · decoding | " + " | ".join(v.name for v in variants) + " |")
    print("|---|" + "---|" * len(variants))
    for part in parts:
        cells = [
            f"{statistics.median(v.parts[part]):.1f}" if v.parts.get(part) else "–"
            for v in variants
        ]
        print(f"| {part} | " + " | ".join(cells) + " |")
    print()
    for other in variants[1:]:
        print(compare(first, other))
    if args.keep:
        print(f"\nrun folders: {keep}")


if __name__ == "__main__":
    main()
