"""`hakari import lm-eval`: lm-evaluation-harness 0.4.x `--output_path … --log_samples`
output: `results_<date>.json` and, beside it, one `samples_<task>_<date>.jsonl` per task
(`lm_eval.loggers.EvaluationTracker`). Folders are searched for both.

What is read, per sample line (`lm_eval.evaluator`: `doc_id`, `doc_hash`, `target`,
`arguments`, `resps`, `filtered_resps`, `filter`, `metrics` and one key per metric):

* the item is `doc_id`; `doc_hash` must agree for a `doc_id` across a task's templates
  (prompt variants of one document), else the variants are not over the same documents;
* the score of a metric is the sample's value under its name (`--score acc,acc_norm`;
  default: every metric of the sample whose values are numbers, e.g. `acc` and `acc_norm`
  both). A metric lm-eval aggregates other than by a mean (its per-sample value is not a
  score: `mcc`, `bleu`, `f1` keep tuples or lists) is not a per-item score: naming it is
  an error, and it is left out of the default;
* one filter's lines (`--filter`; needed when a task logs several, e.g. `strict-match`
  and `flexible-extract`);
* kept in samples.jsonl: the prompt (`arguments.gen_args_0.arg_0`), the raw output of a
  generation, the answer (a generation's filtered response; for a multiple-choice task the
  index of the highest log-likelihood choice) and the gold (`target`).

Provenance: `lm_eval_version` and `transformers_version` of the results file are the
producer versions; the model is the results file's `model_name` (else `config.model`,
else the samples' folder), its `model_args` recorded redacted. When the results file gives
a task's aggregated value of a mean metric, the import's per-template mean is checked
against it (a difference beyond 1e-9 is a note: the samples are not the ones scored).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hakari._util.jsonl import iter_jsonl
from hakari._util.redact import redact_recorded
from hakari.errors import HakariInputError
from hakari.interop.cells import Cell, ImportedGrid, MetricSpec, Origin, item_id, score_value
from hakari.interop.mapping import TaskMapping
from hakari.interop.options import ImportOptions, Reading, expand, read_json

_SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9\-.]+)\.jsonl$")
_RESULTS = re.compile(r"^results_(?P<date>\d{4}-\d{2}-\d{2}T[0-9\-.]+)\.json$")
LOGLIK_TYPES = ("multiple_choice", "loglikelihood", "loglikelihood_rolling")
TOLERANCE = 1e-9


@dataclass
class _Run:
    """One lm-eval run: its results file (if found) and samples files."""

    folder: Path
    date: str
    results: dict[str, Any] | None = None
    results_file: Path | None = None
    samples: dict[str, Path] = field(default_factory=dict)  # lm-eval task -> file


def read(paths: list[Path], options: ImportOptions) -> Reading:
    files = expand(paths, ["results_*.json", "samples_*.jsonl"], "lm-eval results or samples")
    runs = _runs(files)
    reading = Reading(ImportedGrid())
    groups: dict[str, list[str]] = {}
    for run in runs:
        if run.results_file is not None:
            run.results = _results(run.results_file)
            reading.files.append(run.results_file)
            groups.update(_group_subtasks(run.results, run.results_file))
    mapping = TaskMapping(options.templates, options.task, groups, options.group)
    names: list[str] = []
    doc_hashes: dict[tuple[str, str], tuple[str, Origin]] = {}
    for run in runs:
        model = _model(run, options)
        if run.results is None and options.model is None:
            reading.notes.append(
                f"{run.folder}: no results_*.json: the model is named after its folder "
                f"({model!r}) and each task's decoding after its responses"
            )
        identity = _identity(run, model)
        reading.producers.update(_producers(run.results))
        for lm_task, path in sorted(run.samples.items()):
            names.append(lm_task)
            mapped = mapping(lm_task)
            if mapped is None:
                continue
            reading.files.append(path)
            means = _read_samples(
                path,
                run,
                (lm_task, mapped.task, mapped.template, model),
                options,
                reading,
                doc_hashes,
            )
            reading.grid.identities[reading.grid.nfc(model)] = identity
            _check_against_results(run, lm_task, means, options, reading)
    mapping.check_matched(names)
    reading.notes += mapping.notes()
    left = sorted(n for n in names if mapping(n) is None) if options.templates else []
    if left:
        reading.notes.append(
            f"lm-eval tasks not matching the pattern, left out: {', '.join(left[:10])}"
        )
    return reading


def _runs(files: list[Path]) -> list[_Run]:
    runs: dict[tuple[Path, str], _Run] = {}
    for path in files:
        m = _SAMPLES.match(path.name) or _RESULTS.match(path.name)
        if m is None:
            raise HakariInputError(
                "not an lm-eval results_<date>.json or samples_<task>_<date>.jsonl name",
                file=str(path),
                field="PATH",
            )
        run = runs.setdefault((path.parent, m["date"]), _Run(path.parent, m["date"]))
        if path.name.startswith("results_"):
            run.results_file = path
        else:
            run.samples[m["task"]] = path
    out = [r for r in runs.values() if r.samples]
    if not out:
        raise HakariInputError(
            "no samples_<task>_<date>.jsonl beside the results: run lm-eval with --log_samples",
            field="PATH",
        )
    return out


def _results(path: Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise HakariInputError(
            "not an lm-eval results file: no 'results' object", file=str(path), field="results"
        )
    return data


def _group_subtasks(results: dict[str, Any], path: Path) -> dict[str, list[str]]:
    groups = results.get("group_subtasks", {})
    if not isinstance(groups, dict) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in groups.values()
    ):
        raise HakariInputError(
            "group_subtasks is not a map of lists of names", file=str(path), field="group_subtasks"
        )
    return {k: list(v) for k, v in groups.items() if v}


def _model(run: _Run, options: ImportOptions) -> str:
    if options.model:
        return options.model
    results = run.results or {}
    for value in (results.get("model_name"), (results.get("config") or {}).get("model")):
        if isinstance(value, str) and value.strip():
            return value
    # lm-eval names the folder after the model with "/" as "__" (model_name_sanitized):
    # the same spelling as a run of the model that has its results file
    return run.folder.name.replace("__", "/")


def _identity(run: _Run, model: str) -> dict[str, str]:
    identity = {"backend": "lm-eval", "name": model}
    config = (run.results or {}).get("config")
    if isinstance(config, dict):
        for key in ("model", "model_args", "model_revision", "model_sha", "model_dtype"):
            value = config.get(key)
            if value is not None and value != "":
                identity[key] = redact_recorded(value)
    return identity


def _producers(results: dict[str, Any] | None) -> dict[str, str]:
    out = {}
    for key, name in (("lm_eval_version", "lm_eval"), ("transformers_version", "transformers")):
        value = (results or {}).get(key)
        if isinstance(value, str):
            out[name] = value
    return out


def _output_type(run: _Run, lm_task: str) -> str | None:
    config = ((run.results or {}).get("configs") or {}).get(lm_task)
    value = config.get("output_type") if isinstance(config, dict) else None
    return value if isinstance(value, str) else None


def _read_samples(
    path: Path,
    run: _Run,
    names: tuple[str, str, str, str],
    options: ImportOptions,
    reading: Reading,
    doc_hashes: dict[tuple[str, str], tuple[str, Origin]],
) -> dict[str, list[float]]:
    """The cells of one samples file (`names`: lm-eval task, hakari task, template,
    model); returns metric -> the values read (for the check against the results)."""
    lm_task, task, template, model = names
    output_type = _output_type(run, lm_task)
    decoding = options.decoding or ("loglik" if output_type in LOGLIK_TYPES else "generate")
    grid = reading.grid
    chosen: list[MetricSpec] | None = None
    values: dict[str, list[float]] = {}
    filters: set[str] = set()
    for line, sample in iter_jsonl(path, field="PATH"):
        origin = Origin(str(path), line)
        for name in ("doc_id", "filter", "metrics"):
            if name not in sample:
                raise origin.error(f"missing field {name!r}: not an lm-eval samples line", name)
        filters.add(str(sample["filter"]))
        if options.lm_filter is not None and sample["filter"] != options.lm_filter:
            continue
        if options.lm_filter is None and len(filters) > 1:
            raise origin.error(
                f"task {lm_task!r} logs several filters ({', '.join(sorted(filters))}): choose "
                "one with --filter",
                "filter",
            )
        if chosen is None:
            if options.decoding is None and output_type is None:
                # no results file to say the output type: the responses do
                loglik = _looks_loglik(sample.get("filtered_resps"))
                decoding = "loglik" if loglik else "generate"
            chosen = _metrics(sample, options, origin)
            info = grid.task(task, chosen, origin)
            info.language = options.language or info.language
            info.qa_mode = options.qa_mode
        item = item_id(sample["doc_id"], origin, "doc_id")
        _check_doc(doc_hashes, task, item, sample.get("doc_hash"), origin)
        scores = {}
        for metric in chosen:
            if metric.from_answers:
                continue
            if metric.key not in sample:
                raise origin.error(
                    f"missing field {metric.key!r} (a metric of this task?)", metric.key
                )
            scores[metric.key] = score_value(sample[metric.key], origin, metric.key)
            values.setdefault(metric.key, []).append(scores[metric.key])
        cell = Cell(scores, origin, extra={"filter": str(sample["filter"])})
        _texts(cell, sample, output_type)
        if "doc_hash" in sample:
            cell.extra["doc_hash"] = sample["doc_hash"]
        grid.add((model, task, decoding), template, item, cell)
    if chosen is None:
        raise HakariInputError(
            "no sample lines" + (f" for filter {options.lm_filter!r}" if options.lm_filter else ""),
            file=str(path),
            field="--filter" if options.lm_filter else None,
        )
    return values


def _metrics(sample: dict[str, Any], options: ImportOptions, origin: Origin) -> list[MetricSpec]:
    if options.scores or options.metrics:
        return options.metric_specs(())
    listed = sample["metrics"]
    if not isinstance(listed, list):
        raise origin.error("'metrics' is not a list of names", "metrics")
    numeric = [str(m) for m in listed if isinstance(sample.get(m), int | float)]
    if not numeric:
        raise origin.error(
            f"none of the metrics {listed} has a number per sample (a corpus-level metric "
            "such as mcc or bleu is not a per-item score): give --score",
            "metrics",
        )
    return [MetricSpec(m) for m in numeric]


def _check_doc(
    seen: dict[tuple[str, str], tuple[str, Origin]],
    task: str,
    item: str,
    doc_hash: Any,
    origin: Origin,
) -> None:
    if not isinstance(doc_hash, str):
        return
    before = seen.get((task, item))
    if before is None:
        seen[(task, item)] = (doc_hash, origin)
    elif before[0] != doc_hash:
        raise origin.error(
            f"doc_id {item} is another document here (doc_hash {doc_hash[:12]}…) than at line "
            f"{before[1].line} of {before[1].file} ({before[0][:12]}…): the templates of task "
            f"{task!r} are not over the same documents",
            "doc_hash",
        )


def _texts(cell: Cell, sample: dict[str, Any], output_type: str | None) -> None:
    arguments = sample.get("arguments")
    if isinstance(arguments, dict):
        first = arguments.get("gen_args_0")
        if isinstance(first, dict) and isinstance(first.get("arg_0"), str):
            cell.prompt = first["arg_0"]
    if "target" in sample:
        cell.gold = str(sample["target"])
    filtered = sample.get("filtered_resps")
    if output_type in LOGLIK_TYPES or (output_type is None and _looks_loglik(filtered)):
        logliks = [_loglik(r) for r in filtered or []]
        if logliks and all(v is not None for v in logliks):
            cell.answer = str(max(range(len(logliks)), key=lambda k: logliks[k]))  # type: ignore[arg-type,return-value]
        return
    if isinstance(filtered, list) and filtered and isinstance(filtered[0], str):
        cell.answer = filtered[0]
    resps = sample.get("resps")
    if isinstance(resps, list) and resps and isinstance(resps[0], list) and resps[0]:
        if isinstance(resps[0][0], str):
            cell.output = resps[0][0]


def _looks_loglik(filtered: Any) -> bool:
    return (
        isinstance(filtered, list)
        and bool(filtered)
        and all(_loglik(r) is not None for r in filtered)
    )


def _loglik(resp: Any) -> float | None:
    """A choice's log-likelihood from `[ll, is_greedy]`: numbers, or the strings lm-eval
    0.4.13 writes (`["-0.557", "True"]`), or that list's own string form."""
    head: Any = None
    if isinstance(resp, list) and resp:
        head = resp[0]
    elif isinstance(resp, str) and resp.startswith("["):
        head = resp[1:].split(",", 1)[0].strip().strip("'\"")
    if isinstance(head, bool):
        return None
    if isinstance(head, int | float):
        return float(head) if math.isfinite(head) else None
    if isinstance(head, str):
        try:
            value = float(head)
        except ValueError:
            return None
        return value if math.isfinite(value) else None
    return None


def _check_against_results(
    run: _Run, lm_task: str, means: dict[str, list[float]], options: ImportOptions, reading: Reading
) -> None:
    """lm-eval's own aggregated value of each mean metric against the samples' mean."""
    task_results = ((run.results or {}).get("results") or {}).get(lm_task)
    if not isinstance(task_results, dict):
        return
    for metric, values in means.items():
        for key, value in task_results.items():
            name, _, filter_key = key.partition(",")
            if name != metric or (options.lm_filter and filter_key != options.lm_filter):
                continue
            if isinstance(value, int | float) and values:
                mean = sum(values) / len(values)
                if abs(mean - value) > TOLERANCE:
                    reading.notes.append(
                        f"{lm_task}: the samples' mean {metric} {mean:.6f} differs from "
                        f"{value:.6f} in {run.results_file}: are these the samples it scored?"
                    )
