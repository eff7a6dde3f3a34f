"""A peer check of hakari's statistics against evalstats 0.3.3 on the same long table.

The four shared real grids (`../shared/real-grids`: Qwen2.5 0.5B and 1.5B on two MMLU
subjects, 40 templates × 100 items, read by `budget_grids.external_grids`) are written
as one long table (`model, task, template, item, score`). hakari imports it
(`hakari.interop.api.import_run`, the path of `hakari import table`); evalstats gets the
same cells as its score matrices. Compared:

* **per-template intervals** (160 = 4 grids × 40 templates): hakari's
  `templates[T].ci` (percentile interval of the template's accuracy over item
  resamples) against `evalstats.mean_ci` (its automatic method: Wilson's score
  interval for binary scores): equal means, overlap, endpoint differences, widths;
* **paired model verdicts** (one a subject, Holm over the two subjects in both tools):
  hakari's `paired[TASK]` mean difference (templates × items resampled together,
  studentised) against `evalstats.core.paired.pairwise_differences` on the per-item
  means over templates (what evalstats' model view compares: items resampled, templates
  averaged; its automatic method);
* the time of each tool on the same cells.

`--smoke`: one grid cut to 6 templates × 30 items, 200 replicates. The times are wall
seconds of one call each (not best-of-rounds: the agreement is the product here).
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from budget_grids import EXTERNAL_DIR, external_grids
from timing import add_smoke_flag, need_module, need_path

CONFIDENCE = 0.95


def holm(p: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (the same rule for both tools' raw p)."""
    order = np.argsort(p)
    adjusted = np.empty(len(p))
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def verdict(low: float, high: float) -> str:
    return "A" if low > 0 else "B" if high < 0 else "tie"


def cells(smoke: bool) -> dict[tuple[str, str], tuple[list[str], np.ndarray]]:
    """(model, task) -> (template ids, (T, N) scores) of the shared grids."""
    out = {}
    grids = external_grids()
    if smoke:
        grids = [g for g in grids if "marketing" in g.name]
    for grid in grids:
        model, task, _ = grid.name.split(" ")
        scores = grid.item_scores["exact_match"]
        templates = list(grid.template_ids)
        if smoke:
            templates, scores = templates[:6], scores[:6, :30]
        out[(model, task)] = (templates, np.asarray(scores, dtype=float))
    return out


def write_table(grids: dict, path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["model", "task", "template", "item", "score"])
        for (model, task), (templates, scores) in grids.items():
            for t, template in enumerate(templates):
                for i, value in enumerate(scores[t]):
                    writer.writerow([model, task, template, i, value])


def run_hakari(table: Path, n_boot: int) -> tuple[dict, dict, float]:
    from hakari.interop.api import import_run
    from hakari.interop.finish import Settings

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        _, results = import_run(
            "table", [table], Path(tmp) / "run", settings=Settings(n_boot=n_boot, seed=0)
        )
        seconds = time.perf_counter() - started
    intervals = {}
    for model, mres in results.models.items():
        for task, tres in mres.tasks.items():
            for tid, template in tres.decodings["imported"].templates.items():
                ci = template.ci["score"]
                intervals[(model, task, tid)] = (template.metrics["score"], ci.low, ci.high)
    pairs = {}
    for task, by_decoding in results.paired.items():
        for comparison in by_decoding["imported"]:
            mean = comparison.mean
            pairs[task] = (comparison.model_a, mean.diff, mean.ci_low, mean.ci_high, mean.p_value)
    return intervals, pairs, seconds


def run_evalstats(grids: dict, n_boot: int, order: dict[str, tuple[str, str]]) -> tuple:
    import evalstats
    from evalstats.core.paired import pairwise_differences

    started = time.perf_counter()
    intervals = {}
    methods = set()
    for (model, task), (templates, scores) in grids.items():
        for t, tid in enumerate(templates):
            got = evalstats.mean_ci(scores[t], n_bootstrap=n_boot, rng=0)
            intervals[(model, task, tid)] = (got.mean, got.ci_low, got.ci_high)
            methods.add(got.method)
    pairs = {}
    for task, (a, b) in order.items():
        per_item = np.stack([grids[(a, task)][1].mean(axis=0), grids[(b, task)][1].mean(axis=0)])
        d = pairwise_differences(
            per_item, 0, 1, a, b, ci=CONFIDENCE, n_bootstrap=n_boot, rng=np.random.default_rng(0)
        )
        pairs[task] = (a, d.point_diff, d.ci_low, d.ci_high, d.p_value)
        methods.add(f"pair:{d.test_method}")
    return intervals, pairs, time.perf_counter() - started, sorted(methods)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-boot", type=int, default=2000)
    add_smoke_flag(parser)
    args = parser.parse_args()
    need_path(EXTERNAL_DIR, "the shared real grids")
    need_module("evalstats", "pip install 'hakari[dev]' installs evalstats 0.3.3")
    n_boot = 200 if args.smoke else args.n_boot
    grids = cells(args.smoke)
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "grids.csv"
        write_table(grids, table)
        h_int, h_pair, h_sec = run_hakari(table, n_boot)
    order = {task: (model_a, "") for task, (model_a, *_) in h_pair.items()}
    for model, task in grids:
        if model != order[task][0]:
            order[task] = (order[task][0], model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # evalstats announces its automatic choices
        e_int, e_pair, e_sec, methods = run_evalstats(grids, n_boot, order)
    report(h_int, e_int, h_pair, e_pair, h_sec, e_sec, methods, n_boot)


def report(
    h_int: dict,
    e_int: dict,
    h_pair: dict,
    e_pair: dict,
    h_sec: float,
    e_sec: float,
    methods: list[str],
    n_boot: int,
) -> None:
    keys = sorted(h_int)
    mean_diff = max(abs(h_int[k][0] - e_int[k][0]) for k in keys)
    overlap = sum(h_int[k][1] <= e_int[k][2] and e_int[k][1] <= h_int[k][2] for k in keys)
    low = np.array([h_int[k][1] - e_int[k][1] for k in keys])
    high = np.array([h_int[k][2] - e_int[k][2] for k in keys])
    hw = np.array([h_int[k][2] - h_int[k][1] for k in keys])
    ew = np.array([e_int[k][2] - e_int[k][1] for k in keys])
    print(f"per-template intervals ({len(keys)} templates, {n_boot} replicates, 95%)")
    print(f"evalstats methods: {', '.join(methods)}")
    print("| quantity | value |")
    print("|---|---|")
    print(f"| largest mean difference | {mean_diff:.1e} |")
    print(f"| intervals that overlap | {overlap}/{len(keys)} |")
    print(
        f"| low end hakari − evalstats: median, max abs | {np.median(low):+.4f}, "
        f"{np.abs(low).max():.4f} |"
    )
    print(
        f"| high end hakari − evalstats: median, max abs | {np.median(high):+.4f}, "
        f"{np.abs(high).max():.4f} |"
    )
    print(
        f"| width hakari: median (min–max) | {np.median(hw):.4f} ({hw.min():.4f}–{hw.max():.4f}) |"
    )
    print(
        f"| width evalstats: median (min–max) | {np.median(ew):.4f} "
        f"({ew.min():.4f}–{ew.max():.4f}) |"
    )
    print(f"| width ratio hakari / evalstats: median | {np.median(hw / ew):.3f} |")
    print()
    tasks = sorted(h_pair)
    hp = holm([h_pair[t][4] for t in tasks])
    ep = holm([e_pair[t][4] for t in tasks])
    print("paired model verdicts (mean over templates, A = first model; Holm over subjects)")
    print(
        "| task | A | hakari diff [95% CI] | p Holm | verdict | evalstats diff [95% CI] "
        "| p Holm | verdict | agree |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    agree = 0
    for i, task in enumerate(tasks):
        a, hd, hl, hh, _ = h_pair[task]
        _, ed, el, eh, _ = e_pair[task]
        hv = verdict(hl, hh) if hp[i] < 1 - CONFIDENCE else "tie"
        ev = verdict(el, eh) if ep[i] < 1 - CONFIDENCE else "tie"
        agree += hv == ev
        print(
            f"| {task} | {a} | {hd:+.4f} [{hl:+.4f}, {hh:+.4f}] | {hp[i]:.4f} | {hv} "
            f"| {ed:+.4f} [{el:+.4f}, {eh:+.4f}] | {ep[i]:.4f} | {ev} | {hv == ev} |"
        )
    print(
        f"verdicts agree: {agree}/{len(tasks)}; paired CI width ratio hakari / evalstats: "
        + ", ".join(
            f"{(h_pair[t][3] - h_pair[t][2]) / (e_pair[t][3] - e_pair[t][2]):.2f}" for t in tasks
        )
    )
    print()
    print("time (wall s, one call each; the machine was loaded: see docs/results/evalstats.md)")
    print("| tool | seconds | what |")
    print("|---|---|---|")
    print(f"| hakari | {h_sec:.2f} | import + every statistic of a run (Sharpe, space, paired) |")
    print(f"| evalstats | {e_sec:.2f} | per-template mean_ci + the paired differences only |")


if __name__ == "__main__":
    main()
