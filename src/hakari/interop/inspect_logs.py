"""`hakari import inspect`: inspect_ai evaluation logs (`.eval` or `.json`), read with
inspect_ai's own reader (`inspect_ai.log.read_eval_log`: the maintainers keep the format
free to change and point to it), an optional dependency (`pip install 'hakari[interop]'`).

Which template a sample belongs to (`--templates`):

* a pattern over the logs' task names (`demo_p{template}`; one log per template), as for
  lm-eval (`interop.mapping`);
* `arg:NAME`: the task argument NAME of each log (`inspect eval task.py -T prompt=p1`);
* `metadata:NAME`: each sample's metadata field NAME (one log holding every template).

The task is `--task`, else the log's task name (with a pattern: its `{task}` part). The
item is the sample's `id`; several epochs of a sample are its runs (their scores averaged
per cell). Scores per scorer: every scorer of the log (`--score` picks some), each value
converted by inspect_ai's own `value_to_float` (C/I/P/N, yes/no, numbers); a scorer whose
value is a mapping gives one metric per key (`scorer.key`). Kept in samples.jsonl: the
input (a chat's last user message), the completion, the scorer's `answer` and the target.
Provenance: the log's `packages` (inspect_ai's version) and `model_args` (redacted).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hakari._util.redact import redact_recorded
from hakari.errors import HakariInputError, one_line
from hakari.interop.cells import Cell, ImportedGrid, MetricSpec, Origin, item_id, label
from hakari.interop.mapping import Mapped, TaskMapping
from hakari.interop.options import ImportOptions, Reading, expand

DEFAULT_DECODING = "generate"


def _inspect() -> tuple[Any, Any]:
    try:
        from inspect_ai.log import read_eval_log
        from inspect_ai.scorer import value_to_float
    except ImportError:
        raise HakariInputError(
            "reading inspect_ai logs needs inspect_ai: pip install 'hakari[interop]' (or "
            "inspect_ai)",
            field="SOURCE",
        ) from None
    return read_eval_log, value_to_float()


def read(paths: list[Path], options: ImportOptions) -> Reading:
    read_eval_log, to_float = _inspect()
    files = expand(paths, ["*.eval", "*.json"], "inspect_ai logs (.eval, .json)")
    reading = Reading(ImportedGrid())
    pattern = options.templates or ""
    by_arg = pattern.startswith("arg:")
    by_metadata = pattern.startswith("metadata:")
    mapping = TaskMapping(None if by_arg or by_metadata else options.templates, options.task)
    names: list[str] = []
    for path in files:
        try:
            log = read_eval_log(str(path))
        except Exception as exc:  # inspect_ai raises its own errors for a bad log
            raise HakariInputError(
                f"not an inspect_ai log inspect_ai can read: {one_line(exc)}", file=str(path)
            ) from None
        reading.files.append(path)
        task_name = str(log.eval.task)
        names.append(task_name)
        if by_arg:
            arg = pattern[len("arg:") :]
            if arg not in (log.eval.task_args or {}):
                raise HakariInputError(
                    f"the log's task has no argument {arg!r} (it has: "
                    f"{', '.join(sorted(log.eval.task_args or {})) or 'none'})",
                    file=str(path),
                    field="--templates",
                )
            mapped: Mapped | None = Mapped(options.task or task_name, str(log.eval.task_args[arg]))
        elif by_metadata:
            mapped = Mapped(options.task or task_name, "")
        else:
            mapped = mapping(task_name)
        if mapped is None:
            continue
        _add_log(path, log, mapped, to_float, options, reading)
    if not (by_arg or by_metadata):
        mapping.check_matched(names)
        reading.notes += mapping.notes()
    return reading


def _add_log(
    path: Path,
    log: Any,
    mapped: Mapped,
    to_float: Any,
    options: ImportOptions,
    reading: Reading,
) -> None:
    grid = reading.grid
    model = options.model or str(log.eval.model)
    identity = {"backend": "inspect_ai", "name": model}
    if log.eval.model_args:
        identity["model_args"] = redact_recorded(log.eval.model_args)
    if log.eval.model_base_url:
        identity["base_url"] = redact_recorded(str(log.eval.model_base_url))
    grid.identities[grid.nfc(model)] = identity
    reading.producers.update({str(k): str(v) for k, v in (log.eval.packages or {}).items()})
    reading.producers.setdefault("inspect_ai log format", str(log.version))
    if log.status != "success":
        reading.notes.append(
            f"{path.name}: the log's status is {log.status!r}: its finished samples are read"
        )
    samples = log.samples or []
    if not samples:
        raise HakariInputError(
            "the log has no samples (written with --no-log-samples?)", file=str(path)
        )
    decoding = options.decoding or DEFAULT_DECODING
    chosen: list[MetricSpec] | None = None
    metadata_key = (
        (options.templates or "")[len("metadata:") :]
        if (options.templates or "").startswith("metadata:")
        else None
    )
    errored = [sample.id for sample in samples if sample.error is not None]
    if errored:
        reading.notes.append(
            f"{path.name}: {len(errored)} sample(s) ended in an error and are missing cells "
            f"(first: {errored[0]!r})"
        )
    for k, sample in enumerate(samples, start=1):
        if sample.error is not None:
            continue  # no answer to score: the cell is missing, as a failed row is
        origin = Origin(str(path), k)  # the k-th sample of the log
        values = _scores(sample, to_float, origin)
        if chosen is None:
            chosen = (
                options.metric_specs(sorted(values))
                if (options.scores or options.metrics)
                else [MetricSpec(name) for name in values]
            )
            info = grid.task(mapped.task, chosen, origin)
            info.language = options.language or info.language
            info.qa_mode = options.qa_mode
        template = mapped.template
        if metadata_key is not None:
            meta = sample.metadata or {}
            if metadata_key not in meta:
                raise origin.error(
                    f"sample {sample.id!r} has no metadata {metadata_key!r}",
                    f"metadata.{metadata_key}",
                )
            template = label(meta[metadata_key], origin, f"metadata.{metadata_key}")
        scores = {}
        for metric in chosen:
            if metric.from_answers:
                continue
            if metric.key not in values:
                raise origin.error(f"sample {sample.id!r} has no score {metric.key!r}", metric.key)
            scores[metric.key] = values[metric.key]
        cell = Cell(scores, origin)
        _texts(cell, sample)
        run = str(sample.epoch) if len({s.epoch for s in samples}) > 1 else None
        grid.add(
            (model, mapped.task, decoding),
            template,
            item_id(sample.id, origin, "id"),
            cell,
            run=run,
        )


def _scores(sample: Any, to_float: Any, origin: Origin) -> dict[str, float]:
    out: dict[str, float] = {}
    for scorer, score in (sample.scores or {}).items():
        value = score.value
        parts = value.items() if isinstance(value, dict) else [(None, value)]
        for key, part in parts:
            name = scorer if key is None else f"{scorer}.{key}"
            if isinstance(part, list):
                raise origin.error(f"score {name!r} is a list, not one value", name)
            number = float(to_float(part))
            if not math.isfinite(number):
                raise origin.error(
                    f"score {name!r} must be a finite number, got {part!r:.40}", name
                )
            out[name] = number
    if not out:
        raise origin.error(
            f"sample {sample.id!r} has no scores (the log was not scored?)", "scores"
        )
    return out


def _texts(cell: Cell, sample: Any) -> None:
    value = sample.input
    if isinstance(value, str):
        cell.prompt = value
    elif isinstance(value, list) and value:
        users = [m for m in value if getattr(m, "role", None) == "user"]
        message = (users or value)[-1]
        cell.prompt = str(getattr(message, "text", "") or "")
    target = sample.target
    cell.gold = target if isinstance(target, str) else [str(t) for t in target]
    if sample.output is not None:
        cell.output = str(sample.output.completion or "")
    answers = [s.answer for s in (sample.scores or {}).values() if s.answer is not None]
    if answers:
        cell.answer = str(answers[0])
