"""`hakari score RUN_DIR`: add metric and judge scores to a finished run, no regeneration.

Each sample of `samples.jsonl` is scored with its `output` as the prediction, its `gold`
as the reference (a list of golds stays a list) and its `prompt` as the instruction.
`samples.jsonl` gets a `scores` object per sample (and `judgements` with a judge);
`results.json` gets, under each model × task × decoding, `rescored[METRIC]`:
per-template means, the across-template aggregate (mean, population std, Sharpe, as for
the run's own metrics) and the number of unscored samples; and a top-level `rescoring`
block with the models, prompt versions and judge summary. The command holds the run
folder's lock from before it reads the run until both files are published (a second
`score`, `analyze` or `run --output` of the folder is refused meanwhile), and both files
are complete on disk before the first rename (`hakari._util.atomic.publish_together`):
a full disk leaves the old pair. Only a crash between the two renames leaves new samples
with old results, which `hakari score RUN_DIR` repairs when run again (the judge's
answers come from the cache).

Both files must be writable before any scoring starts (one line naming the file).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from hakari import aggregate as agg
from hakari._util.atomic import (
    RESULTS_FILE,
    SAMPLES_FILE,
    Output,
    StagedFile,
    check_output,
    json_line,
    publish_together,
)
from hakari._util.jsonl import read_jsonl, row_line, strip_line
from hakari.errors import HakariInputError, one_line
from hakari.rescore.common import (
    JudgeOptions,
    merged_scores,
    prepare_suite,
    reference_text,
    score_samples,
)
from hakari.rescore.files import summarise
from hakari.results import BudgetRecord, EvalResults, RescoredMetric
from hakari.runner.rundir import locked_run_folder
from hakari.scoring.samples import ScoringConfig, metric_infos

SAMPLE_FIELDS = ("model", "task", "decoding", "template_id", "prompt", "output", "gold")


def read_run(run_dir: Path) -> tuple[EvalResults, list[dict[str, Any]]]:
    results_path, samples_path = run_dir / RESULTS_FILE, run_dir / SAMPLES_FILE
    if not run_dir.is_dir():
        raise HakariInputError("not a run folder", file=str(run_dir))
    for path in (results_path, samples_path):
        if not path.is_file():
            raise HakariInputError("missing: is this a finished run folder?", file=str(path))
    try:
        results = EvalResults.read(results_path)
    except OSError as exc:
        raise HakariInputError(
            f"cannot read results: {one_line(exc, 300)}", file=str(results_path)
        ) from None
    samples = read_jsonl(samples_path)
    for row in samples:
        missing = [f for f in SAMPLE_FIELDS if f not in row]
        if missing:
            raise HakariInputError(
                f"line {row_line(row)}: sample without {', '.join(missing)}",
                file=str(samples_path),
            )
        if not isinstance(row["output"], str) or not isinstance(row["prompt"], str):
            raise HakariInputError(
                f"line {row_line(row)}: 'output' and 'prompt' must be strings",
                file=str(samples_path),
            )
        if "scores" in row and not isinstance(row["scores"], dict):
            raise HakariInputError(
                f"line {row_line(row)}: field 'scores' is not an object", file=str(samples_path)
            )
    return results, samples


def score_run(
    run_dir: Path,
    metrics: list[str],
    config: ScoringConfig,
    judge: JudgeOptions | None = None,
) -> dict[str, Any]:
    if not run_dir.is_dir():
        raise HakariInputError("not a run folder", file=str(run_dir))
    with locked_run_folder(run_dir, "RUN_DIR"):
        return _score_run(run_dir, metrics, config, judge)


def _score_run(
    run_dir: Path,
    metrics: list[str],
    config: ScoringConfig,
    judge: JudgeOptions | None,
) -> dict[str, Any]:
    results, samples = read_run(run_dir)
    _check_scorable(run_dir / SAMPLES_FILE, samples, metrics)
    for name in (SAMPLES_FILE, RESULTS_FILE):
        _check_replaceable(run_dir / name)
    suite = prepare_suite(metrics, config, has_prompts=True)
    scored = score_samples(
        suite,
        judge,
        [s["output"] for s in samples],
        [reference_text(s["gold"]) for s in samples],
        [s["prompt"] for s in samples],
    )
    without_gold = _unscored_without_gold(samples, scored.values)
    new_samples = []
    for i, row in enumerate(samples):
        record = strip_line(row)
        record["scores"] = merged_scores(
            record, {k: v[i] for k, v in scored.values.items()}, "sample"
        )
        if scored.judgements:
            old = record.get("judgements")
            judgements: dict[str, Any] = dict(old) if isinstance(old, dict) else {}
            judgements.update({k: v[i] for k, v in scored.judgements.items()})
            record["judgements"] = judgements
        new_samples.append(record)
    alpha = results.config.alpha if results.config.alpha is not None else 1.0
    _add_rescored(results, new_samples, list(scored.values), alpha)
    entry = {"metrics": list(scored.values), **scored.provenance}
    results.rescoring = [*(results.rescoring or []), entry]
    _publish(run_dir, new_samples, results)
    summary = {"samples": len(samples), **summarise(scored.values), **scored.provenance}
    return summary | ({"without_gold": without_gold} if without_gold else {})


def _referenced(metrics: list[str]) -> list[str]:
    """The metrics of `--metrics` that compare an output with a gold (a raw reward does
    not; a judge's score is its own: its prompt decides)."""
    known = metric_infos()
    return [m for m in metrics if m in known and known[m].needs_reference]


def _unscored_without_gold(
    samples: list[dict[str, Any]], values: dict[str, list[float | None]]
) -> dict[str, int]:
    """A sample whose gold is null (an import where only some items carry one) is
    unscored by every metric that compares with a gold, not scored against the text
    "null" (0.0); returns how many per metric, for the summary to say."""
    missing = [i for i, s in enumerate(samples) if s["gold"] is None]
    counted: dict[str, int] = {}
    for metric in _referenced(list(values)) if missing else []:
        for i in missing:
            values[metric][i] = None
        counted[metric] = len(missing)
    return counted


def _check_scorable(path: Path, samples: list[dict[str, Any]], metrics: list[str]) -> None:
    """Something to score: an output in some sample, and a gold where a metric compares
    with one (an import of bare per-item scores has neither; scoring its empty outputs
    against the text "null" gave 0.0 everywhere, none counted unscored)."""
    if not any(s["output"] for s in samples):
        raise HakariInputError(
            "no sample has an output (an import of per-item scores alone?): nothing to score",
            file=str(path),
            field="RUN_DIR",
        )
    referenced = _referenced(metrics)
    if referenced and all(s["gold"] is None for s in samples):
        raise HakariInputError(
            f"no sample has a gold: {referenced[0]} compares an output with one",
            file=str(path),
            field="--metrics",
        )


def _check_replaceable(path: Path) -> None:
    """Before any scoring: the run's file can be replaced (a read-only or immutable one
    would fail only at the end, after the work)."""
    check_output(Output(path, "RUN_DIR", owner=True))
    if not os.access(path, os.W_OK):
        raise HakariInputError(
            "cannot be written (read-only or immutable); the run folder is left as it is",
            file=str(path),
            field="RUN_DIR",
        )


def _publish(run_dir: Path, samples: list[dict[str, Any]], results: EvalResults) -> None:
    staged = [
        StagedFile(Output(run_dir / SAMPLES_FILE, "RUN_DIR", owner=True)),
        StagedFile(Output(run_dir / RESULTS_FILE, "RUN_DIR", owner=True)),
    ]
    try:
        for row in samples:
            staged[0].write(json_line(row))
        staged[1].write(results.file_text())  # without credentials
    except BaseException:
        for file in staged:
            file.discard()
        raise
    publish_together(staged)


def _add_rescored(
    results: EvalResults, samples: list[dict[str, Any]], metrics: list[str], alpha: float
) -> None:
    keys = results.sample_model_keys()
    buckets: dict[tuple[str, str, str], dict[str, dict[str, list[float | None]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for s in samples:
        for m in metrics:
            buckets[(s["model"], s["task"], s["decoding"])][m][str(s["template_id"])].append(
                s["scores"].get(m)
            )
    for (model, task, decoding), per_metric in buckets.items():
        model_result = results.models.get(keys.get(model, model))
        task_result = model_result.tasks.get(task) if model_result else None
        dec = task_result.decodings.get(decoding) if task_result else None
        if dec is None:
            continue
        rescored = dict(dec.rescored or {})
        for metric, per_template in per_metric.items():
            means: dict[str, float] = {}
            unscored = 0
            for tid, values in per_template.items():
                got = [v for v in values if v is not None]
                unscored += len(values) - len(got)
                if got:
                    means[tid] = sum(got) / len(got)
            entry = RescoredMetric(templates=means, n_unscored=unscored)
            if means:
                entry.aggregate = agg.aggregate(means, alpha=alpha)
            if dec.budget is not None:  # a budgeted run: only the cells it ran
                _mark_partial(entry, sum(map(len, per_template.values())), dec.budget)
            rescored[metric] = entry
        dec.rescored = rescored


def _mark_partial(entry: RescoredMetric, scored: int, budget: BudgetRecord) -> None:
    """A budgeted run's samples are part of the grid: the rescored numbers are means over
    the cells run (not completed like the run's own estimates), said so."""
    entry.cells_scored = scored
    entry.grid_size = budget.design.grid_size
    if entry.aggregate is not None:
        entry.aggregate = entry.aggregate.model_copy(update={"estimated": True})
