"""Make the complete template × instance answer grids that `bench_budget.py` treats as
ground truth, by running hakari itself (its `evaluate`, its response cache), and store
each one compactly under `tests/fixtures/grids/`.

A grid is one model × task × decoding on a seeded `--sample` of the task's evaluation
split, every template: what a budgeted run would estimate from a few of its cells. Each
file (`<model>__<task>__<decoding>.json.gz`) holds no text: the sampled row positions,
the template ids, and per cell the answer's label code (label tasks), its EM and F1
(reading comprehension) or the predicted number (STS), the fallback flag, the gold codes
or numbers per instance, and the per-template metrics hakari's run reported (so that a
reader can check the grid reproduces them). The gold labels are derived from the
datasets under their licences (JGLUE: CC BY-SA 4.0, CommonsenseQA: MIT).

Runs go through the response cache (`--cache-dir`, else `$HAKARI_CACHE_DIR`), so a killed
run resumes where it stopped, and a grid that exists is skipped unless `--force`.

    PYTHONPATH=src python benchmarks/make_budget_grids.py --data-dir ../shared/datasets \
        [--only jcola] [--work /tmp/budget-grid-runs]

The CPU cost is what limits the sizes: on the 2-core machine shared with other work,
loglik at batch 32 (the in-process default) ran ~2 prompts a second for Gemma and ~0.8
for SmolLM2 on Japanese (its tokenizer splits Japanese finely), greedy ~7 s a prompt (the
demo task, load 6-14),
so the grids are smaller than the few hundred instances a task deserves (JCoLA 200, JNLI
and JCommonsenseQA 60, the demo task's 32); `--only` and a larger `sample` in GRIDS make
bigger ones on a quieter machine. The stored grids are listed in `grids/README.md`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hakari
from hakari.scoring import corpus

# tests read them too: they live with the test fixtures
GRID_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "grids"
SCHEMA = 1


@dataclass(frozen=True)
class GridSpec:
    model: str
    task: str
    decodings: tuple[str, ...]
    sample: int
    seed: int = 16


# Ordered by value per CPU second: label tasks under loglik first (the cheapest decoding),
# two models on the same cells (same sample and seed) for the ranking check, the
# expensive free-text and numeric tasks last and smaller. Both packaged models answer the
# Japanese tasks under loglik with (nearly) one option per template (the prior of the
# option index), so the English grids carry more of the signal.
GRIDS = (
    GridSpec("gemma3-270m", "jcola", ("loglik",), 200),
    GridSpec("gemma3-270m", "jnli", ("loglik",), 60),
    GridSpec("smollm2-135m", "jnli", ("loglik",), 60),
    GridSpec("gemma3-270m", "jcommonsenseqa", ("loglik",), 60),
    GridSpec("gemma3-270m", "demo_sentiment_en", ("greedy", "loglik"), 32),
    GridSpec("smollm2-135m", "demo_sentiment_en", ("loglik",), 32),
    GridSpec("gemma3-270m", "commonsenseqa", ("loglik",), 60),
    GridSpec("smollm2-135m", "jcommonsenseqa", ("loglik",), 60),
    GridSpec("smollm2-135m", "commonsenseqa", ("loglik",), 60),
    GridSpec("smollm2-135m", "demo_sentiment_en", ("greedy",), 32),
    GridSpec("gemma3-270m", "jsquad", ("greedy",), 16),
    GridSpec("smollm2-135m", "jcola", ("loglik",), 200),
    GridSpec("gemma3-270m", "jsts", ("constrained",), 40),
)


def grid_path(model: str, task: str, decoding: str) -> Path:
    return GRID_DIR / f"{model}__{task}__{decoding}.json.gz"


def _read_samples(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _grid_of(
    results: dict[str, Any],
    samples: list[dict[str, Any]],
    spec: GridSpec,
    decoding: str,
    task_labels: list[Any] | None,
) -> dict[str, Any]:
    task_result = results["models"][spec.model]["tasks"][spec.task]
    dec = task_result["decodings"][decoding]
    template_ids = list(dec["templates"])
    rows = sorted({s["index"] for s in samples})
    position = {row: k for k, row in enumerate(rows)}
    by_cell: dict[tuple[str, int], dict[str, Any]] = {}
    golds: dict[int, Any] = {}
    for s in samples:
        by_cell[(s["template_id"], position[s["index"]])] = s
        golds[position[s["index"]]] = s["gold"]
    n = len(rows)
    missing = [(t, i) for t in template_ids for i in range(n) if (t, i) not in by_cell]
    if missing:
        raise SystemExit(f"{spec.model} {spec.task} {decoding}: {len(missing)} cells missing")
    gold_list = [golds[i] for i in range(n)]
    metric_names = list(task_result["metrics"])
    grid: dict[str, Any] = {
        "schema": SCHEMA,
        "model": spec.model,
        "model_identity": results["models"][spec.model]["identity"],
        "task": spec.task,
        "language": task_result["language"],
        "decoding": decoding,
        "metrics": metric_names,
        "sample": spec.sample,
        "seed": spec.seed,
        "rows": rows,
        "template_ids": template_ids,
        "fallback": [
            [int(bool(by_cell[(t, i)]["fallback"])) for i in range(n)] for t in template_ids
        ],
        "full_grid": {
            m: {t: dec["templates"][t]["metrics"][m] for t in template_ids} for m in metric_names
        },
        "hakari_version": results["versions"]["hakari"],
    }
    answers = {t: [by_cell[(t, i)]["answer"] for i in range(n)] for t in template_ids}
    if task_labels is not None:
        labels = [str(x) for x in task_labels]
        code = {label: k for k, label in enumerate(labels)}
        grid["kind"] = "label"
        grid["labels"] = labels
        grid["golds"] = [code[str(g)] for g in gold_list]
        grid["answers"] = [[code[str(a)] for a in answers[t]] for t in template_ids]
    elif all(corpus.get(m).per_item for m in metric_names):
        options = {"lang": task_result["language"], "nfkc": True}
        grid["kind"] = "score"
        grid["item_scores"] = {
            m: [
                [
                    round(float(v), 6)
                    for v in corpus.per_item_scores(m, answers[t], gold_list, **options) or []
                ]
                for t in template_ids
            ]
            for m in metric_names
        }
    else:
        grid["kind"] = "number"
        grid["golds"] = [float(g) for g in gold_list]
        grid["answers"] = [[float(a) for a in answers[t]] for t in template_ids]
    return grid


def make(spec: GridSpec, args: argparse.Namespace) -> None:
    todo = [
        d for d in spec.decodings if args.force or not grid_path(spec.model, spec.task, d).exists()
    ]
    if not todo:
        print(f"{spec.model} {spec.task}: grids exist", flush=True)
        return
    out = Path(args.work) / f"{spec.model}__{spec.task}"
    started = time.perf_counter()
    hakari.evaluate(
        models=[spec.model],
        tasks=[spec.task],
        decodings=list(todo),
        sample=spec.sample,
        seed=spec.seed,
        data_dir=args.data_dir,
        cache_dir=args.cache_dir,
        output_dir=out,
        n_boot=0,
        batch_size=args.batch_size,
    )
    wall = time.perf_counter() - started
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    per_decoding: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in _read_samples(out / "samples.jsonl"):
        per_decoding[s["decoding"]].append(s)
    task_spec = hakari.load_task(spec.task).spec
    labels = list(task_spec.labels or []) if task_spec.answer_type == "label" else None
    GRID_DIR.mkdir(parents=True, exist_ok=True)
    for decoding in todo:
        dec = results["models"][spec.model]["tasks"][spec.task]["decodings"][decoding]
        grid = _grid_of(results, per_decoding[decoding], spec, decoding, labels)
        grid["generated"] = dec.get("generated")
        grid["wall_s"] = dec.get("wall_s")
        path = grid_path(spec.model, spec.task, decoding)
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as fh:
            json.dump(grid, fh, separators=(",", ":"))
        print(
            f"{spec.model} {spec.task} {decoding}: {len(grid['template_ids'])} templates × "
            f"{len(grid['rows'])} instances, {dec.get('generated')} generated, "
            f"{dec.get('wall_s')} s -> {path.name} ({path.stat().st_size} bytes)",
            flush=True,
        )
    print(f"{spec.model} {spec.task}: {wall:.0f} s in all", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--work", default="/tmp/budget-grid-runs")
    parser.add_argument("--batch-size", type=int, default=None, help="default: the backend's")
    parser.add_argument("--only", default=None, help="comma-separated task or model names")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    wanted = set(args.only.split(",")) if args.only else None
    for spec in GRIDS:
        if wanted and not ({spec.task, spec.model} & wanted):
            continue
        make(spec, args)
    sys.exit(0)


if __name__ == "__main__":
    main()
