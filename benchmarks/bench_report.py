"""Time and size of `hakari report --html` at the paper's scale, and print a table.

A synthetic run shaped like the paper's full evaluation: the ten paper tasks as hakari
ships them (every template: 14 + 8 + 18 + 8 + 12 Japanese, the English ones likewise),
`--models` models × greedy / constrained / loglik, per-template scores (with intervals as
wide as a proportion's on the instances) and aggregates from
`hakari.aggregate.aggregate`, paired differences for every model pair, and a
samples.jsonl with every model × decoding × template × instance (prompts rendered from
the real templates with filler text of realistic length). The report is then built from
disk exactly as `hakari report RUN --html OUT` does. Targets (issue 11): < 10 s, < 5 MB.

Run: PYTHONPATH=src .venv/bin/python benchmarks/bench_report.py [--models 3] [--instances 200]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from timing import add_smoke_flag

from hakari.aggregate import PairedComparison, PairedStatistic, TemplateInterval, aggregate
from hakari.results import (
    DecodingResult,
    EvalResults,
    ModelResult,
    RunConfig,
    TaskResult,
    TemplateResult,
)
from hakari.tasks.loader import load_task

PAPER_TASKS = [
    "jcola", "jsts", "jnli", "jsquad", "jcommonsenseqa",
    "cola", "stsb", "mnli", "squad", "commonsenseqa",
]  # fmt: skip
DECODINGS = ["greedy", "constrained", "loglik"]
FILLER = {"ja": "これは文脈の一部です。", "en": "This is part of the context. "}


def _filler(lang: str, chars: int) -> str:
    unit = FILLER["ja" if lang == "ja" else "en"]
    return (unit * (chars // len(unit) + 1))[:chars]


def _prompt(template: str, lang: str, rng: np.random.Generator) -> str:
    fields: dict[str, str] = defaultdict(lambda: _filler(lang, int(rng.integers(20, 80))))
    for long_field in ("context", "paragraph"):
        fields[long_field] = _filler(lang, int(rng.integers(300, 700)))
    return template.format_map(fields)


def _interval(score: float, n: int) -> TemplateInterval:
    """A template's interval as wide as a proportion's on n instances."""
    half = 1.96 * (score * (1 - score) / n) ** 0.5
    return TemplateInterval(low=max(score - half, 0.0), high=min(score + half, 1.0))


def synthetic_run(folder: Path, n_models: int, n_instances: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    models = [f"model-{i}" for i in range(n_models)]
    results = EvalResults(
        config=RunConfig(models=models, tasks=PAPER_TASKS, decodings=DECODINGS, alpha=1.0),
        versions={"hakari": "bench"},
    )
    paired: dict[str, dict[str, list[PairedComparison]]] = {}
    with (folder / "samples.jsonl").open("w", encoding="utf-8") as out:
        for task_name in PAPER_TASKS:
            spec = load_task(task_name).spec
            prompts = {
                t.id: [_prompt(t.prompt, spec.language, rng) for _ in range(n_instances)]
                for t in spec.templates
            }
            for model in models:
                mres = results.models.setdefault(model, ModelResult(identity={"name": model}))
                task = TaskResult(
                    language=spec.language,
                    n_instances=n_instances,
                    metrics=list(spec.metrics),
                    chance={m: 0.33 for m in spec.metrics},
                )
                for decoding in DECODINGS:
                    dec = DecodingResult()
                    for t in spec.templates:
                        scores = {m: float(rng.uniform(0.2, 0.9)) for m in spec.metrics}
                        dec.templates[t.id] = TemplateResult(
                            metrics=scores,
                            fallback_rate=float(rng.uniform(0, 1)) if decoding == "greedy" else 0,
                            n=n_instances,
                            ci={m: _interval(v, n_instances) for m, v in scores.items()},
                        )
                        for i, text in enumerate(prompts[t.id]):
                            record = {
                                "model": model,
                                "task": task_name,
                                "decoding": decoding,
                                "template_id": t.id,
                                "index": i,
                                "prompt": text,
                                "output": _filler(spec.language, int(rng.integers(1, 60))),
                                "answer": "A",
                                "matched": None,
                                "fallback": bool(rng.random() < 0.3),
                                "gold": "A" if rng.random() < 0.5 else "B",
                            }
                            out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    for m in spec.metrics:
                        per_template = {k: v.metrics[m] for k, v in dec.templates.items()}
                        point = aggregate(per_template, alpha=1.0)
                        mean, sharpe = point.mean, point.sharpe
                        dec.aggregate[m] = point.model_copy(update=dict(
                            ci_low=mean - 0.05, ci_high=mean + 0.05, ci_method="studentized",
                            sharpe_ci_low=sharpe - 0.06, sharpe_ci_high=sharpe + 0.06,
                        ))  # fmt: skip
                    task.decodings[decoding] = dec
                mres.tasks[task_name] = task
            for decoding in DECODINGS:
                paired.setdefault(task_name, {})[decoding] = [
                    PairedComparison(
                        model_a=a,
                        model_b=b,
                        metric=m,
                        alpha=1.0,
                        mean=PairedStatistic(
                            a=0.51,
                            b=0.5,
                            diff=0.01,
                            ci_low=-0.02,
                            ci_high=0.04,
                            p_value=0.4,
                            verdict="inconclusive",
                        ),
                        sharpe=PairedStatistic(
                            a=0.42,
                            b=0.4,
                            diff=0.02,
                            ci_low=0.01,
                            ci_high=0.05,
                            p_value=0.01,
                            verdict="a_better",
                        ),
                        n_templates=len(spec.templates),
                        n_instances=n_instances,
                        n_boot=1000,
                        confidence=0.95,
                        seed=0,
                        ci_method="studentized",
                    )
                    for m in spec.metrics
                    for i, a in enumerate(models)
                    for b in models[i + 1 :]
                ]
    results.paired = paired
    results.write(folder / "results.json")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--samples", type=int, default=3, help="instances per template shown")
    parser.add_argument("--keep", type=Path, help="write the run and the report here")
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.models, args.instances = 2, 3

    from hakari.reports.csv_export import write_csv
    from hakari.reports.inputs import load_inputs
    from hakari.reports.page import build_html

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        run = synthetic_run(folder, args.models, args.instances)
        made = time.perf_counter() - t0
        samples_mb = (run / "samples.jsonl").stat().st_size / 1e6
        lines = sum(1 for _ in (run / "samples.jsonl").open(encoding="utf-8"))

        wall0, cpu0 = time.perf_counter(), time.process_time()
        html = build_html(load_inputs([run]), samples_per_template=args.samples)
        (folder / "report.html").write_text(html, encoding="utf-8")
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        size = (folder / "report.html").stat().st_size
        c0 = time.perf_counter()
        write_csv(load_inputs([run]), folder / "csv")
        csv_s = time.perf_counter() - c0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    n_templates = sum(len(load_task(t).spec.templates) for t in PAPER_TASKS)
    rows = [
        (
            "input",
            f"{args.models} models × {len(PAPER_TASKS)} tasks × {len(DECODINGS)} "
            f"decodings × {n_templates} templates",
        ),
        ("samples.jsonl", f"{lines:,} lines, {samples_mb:.0f} MB (made in {made:.1f} s)"),
        ("report wall time", f"{wall:.2f} s (target < 10 s)"),
        ("report CPU time", f"{cpu:.2f} s"),
        ("report size", f"{size / 1e6:.2f} MB (target < 5 MB)"),
        ("charts (inline SVG)", str(html.count('<svg class="chart"'))),
        ("sample prompts shown", str(html.count('<article class="blk'))),
        ("CSV export", f"{csv_s:.2f} s"),
        ("peak RSS", f"{peak:.0f} MB"),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"| {'what'.ljust(width)} | number |")
    print(f"|{'-' * (width + 2)}|--------|")
    for key, value in rows:
        print(f"| {key.ljust(width)} | {value} |")


if __name__ == "__main__":
    main()
