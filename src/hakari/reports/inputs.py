"""What a report is made of: one or more runs (results.json + samples.jsonl) and
meta-evaluation files, read and merged into one `ReportData`.

`hakari report` accepts run folders, results.json files and meta-evaluation JSON files
in any mix. Runs are merged model by model, so models evaluated in separate runs appear
side by side (a model name seen twice gets a ` (2)` suffix rather than silently
replacing the first). Samples are never loaded whole: `read_samples` streams the JSONL
and keeps the first N instances per task × template, which is all the page shows.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hakari._util.infiles import open_input, read_input_text
from hakari.errors import HakariInputError
from hakari.reports.correctness import is_correct
from hakari.results import EvalResults, ModelResult


@dataclass
class Run:
    """One run: where it came from, its results, and its samples file if it has one."""

    source: Path
    results: EvalResults
    samples: Path | None
    labels: dict[str, str] = field(default_factory=dict)  # run's model key -> report label


@dataclass
class ReportData:
    runs: list[Run]
    models: dict[str, ModelResult]  # report label -> results, in input order
    meta: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    # what the report left out of its inputs, one line each ("FILE: skipped line 7 ...")
    notes: list[str] = field(default_factory=list)

    @property
    def tasks(self) -> list[str]:
        seen: dict[str, None] = {}
        for m in self.models.values():
            seen.update(dict.fromkeys(m.tasks))
        return list(seen)

    def decodings(self, task: str) -> list[str]:
        seen: dict[str, None] = {}
        for m in self.models.values():
            if task in m.tasks:
                seen.update(dict.fromkeys(m.tasks[task].decodings))
        return list(seen)

    def language(self, task: str) -> str:
        """The task's language as its first model recorded it ("en" when none did)."""
        for model in self.models.values():
            if task in model.tasks:
                return model.tasks[task].language
        return "en"


def _is_meta(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("levels"), dict)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(read_input_text(path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HakariInputError(f"cannot read: {exc}", file=str(path)) from exc


def input_files(paths: Iterable[Path]) -> list[Path]:
    """The files `load_inputs` reads for `paths` (a run folder: its results.json and
    samples.jsonl), which no output of the report may replace."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += [path / "results.json", path / "samples.jsonl"]
        else:
            files += [path, path.parent / "samples.jsonl"]
    return files


def load_inputs(paths: Iterable[Path]) -> ReportData:
    """Read run folders, results.json files and meta-evaluation JSON files."""
    runs: list[Run] = []
    meta: list[tuple[Path, dict[str, Any]]] = []
    for path in paths:
        results_path = path / "results.json" if path.is_dir() else path
        if path.is_dir() and not results_path.exists():
            raise HakariInputError("folder has no results.json", file=str(path))
        if not results_path.exists():
            raise HakariInputError("no such file", file=str(path))
        obj = _read_json(results_path)
        if _is_meta(obj):
            meta.append((results_path, obj))
            continue
        results = EvalResults.from_data(obj, source=str(results_path))
        if not results.models:
            failed = f" (failed: {', '.join(results.failed)})" if results.failed else ""
            raise HakariInputError(
                f"holds no model's results{failed}: nothing to report", file=str(results_path)
            )
        samples = results_path.parent / "samples.jsonl"
        runs.append(Run(results_path, results, samples if samples.exists() else None))
    if not runs and not meta:
        raise HakariInputError("nothing to report", field="RUN_DIR_OR_RESULTS")
    return ReportData(runs=runs, models=_merge_models(runs), meta=meta)


def _estimated(run: Run) -> bool:
    """A budgeted run: its numbers were estimated from part of each grid."""
    return any(
        dec.budget is not None
        for model in run.results.models.values()
        for task in model.tasks.values()
        for dec in task.decodings.values()
    )


def _merge_models(runs: list[Run]) -> dict[str, ModelResult]:
    """Report label -> results. A model of a budgeted run is labelled "(estimated)"; when
    the same model also comes from a full run, that one is labelled "(full grid)", so a
    report never shows an estimated number under the name of a measured one."""
    models: dict[str, ModelResult] = {}
    estimated_keys = {key for run in runs if _estimated(run) for key in run.results.models}
    for run in runs:
        estimated = _estimated(run)
        for key, result in run.results.models.items():
            base = key
            if estimated:
                base = f"{key} (estimated)"
            elif key in estimated_keys:
                base = f"{key} (full grid)"
            label, n = base, 1
            while label in models:
                n += 1
                label = f"{base} ({n})"
            models[label] = result
            run.labels[key] = label
    return models


@dataclass
class SampleRow:
    model: str
    decoding: str
    output: str
    answer: Any
    fallback: bool
    correct: bool | None


@dataclass
class SampleBlock:
    """One prompt (task × template × instance) and what every model answered to it."""

    task: str
    template_id: str
    index: int
    prompt: str
    gold: Any
    rows: list[SampleRow] = field(default_factory=list)


# json.dumps keeps key order, and the runner writes these keys first: the group of a line
# can be read without parsing the (long) prompt and output.
_HEAD = re.compile(
    r'^\{"model": ("(?:[^"\\]|\\.)*"), "task": ("(?:[^"\\]|\\.)*"), '
    r'"decoding": "(?:[^"\\]|\\.)*", "template_id": ("(?:[^"\\]|\\.)*"), "index": (\d+)'
)


@functools.lru_cache(maxsize=4096)
def _json_string(raw: str) -> str:
    return raw[1:-1] if "\\" not in raw else str(json.loads(raw))


def _group_of(line: str) -> tuple[str, str, str, int] | None:
    m = _HEAD.match(line)
    if m is None:
        return None
    model, task, template = (_json_string(g) for g in m.group(1, 2, 3))
    return model, task, template, int(m.group(4))


def _wanted(kept: dict[tuple[str, str], list[int]], per_template: int, line: str) -> bool:
    """Whether a samples.jsonl line may hold an instance still to show (read from its
    head, without parsing the long prompt and output)."""
    head = _group_of(line)
    if head is None:
        return True
    _, task, template, index = head
    indices = kept.get((task, template), [])
    return index in indices or len(indices) < per_template


def read_samples(data: ReportData, per_template: int) -> dict[str, list[SampleBlock]]:
    """task -> the first `per_template` instances of every template, with every model's
    and decoding's answer to each. A line that is no sample record (a line cut by a
    kill, a hand edit, bytes that are not UTF-8) is skipped and said in `data.notes`:
    the rest of the file is still shown."""
    blocks: dict[tuple[str, str, int], SampleBlock] = {}
    kept: dict[tuple[str, str], list[int]] = {}
    for run in data.runs:
        if run.samples is None or per_template <= 0:
            continue
        names = {r.identity.get("name", k): run.labels[k] for k, r in run.results.models.items()}
        names.update({k: run.labels[k] for k in run.results.models})
        qa_mode = run.results.config.qa_mode or "first-line"
        skipped: list[int] = []
        with open_input(run.samples) as fh:
            for lineno, raw in enumerate(fh, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    skipped.append(lineno)
                    continue
                if not _wanted(kept, per_template, line):
                    continue
                rec = _sample_record(line)
                if rec is None:
                    if line.strip():
                        skipped.append(lineno)
                    continue
                task, template, index = rec["task"], str(rec["template_id"]), rec["index"]
                indices = kept.setdefault((task, template), [])
                if index not in indices:
                    if len(indices) >= per_template:
                        continue
                    indices.append(index)
                key = (task, template, index)
                block = blocks.get(key)
                if block is None:
                    block = blocks[key] = SampleBlock(
                        task, template, index, str(rec.get("prompt", "")), rec.get("gold")
                    )
                model = names.get(str(rec.get("model")), str(rec.get("model")))
                block.rows.append(
                    SampleRow(
                        model=model,
                        decoding=str(rec.get("decoding", "")),
                        output=str(rec.get("output", "")),
                        answer=rec.get("answer"),
                        fallback=bool(rec.get("fallback")),
                        correct=is_correct(
                            rec.get("answer"),
                            rec.get("gold"),
                            language=data.language(task),
                            qa_mode=qa_mode,
                        ),
                    )
                )
        if skipped:
            more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
            data.notes.append(
                f"{run.samples}: skipped line {skipped[0]}{more}: not a sample record "
                "(the other samples are shown)"
            )
    out: dict[str, list[SampleBlock]] = {}
    for block in blocks.values():
        out.setdefault(block.task, []).append(block)
    return out


def _sample_record(line: str) -> dict[str, Any] | None:
    """A samples.jsonl line as a record with a task, template id and index, or None."""
    try:
        rec = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(rec, dict):
        return None
    ok = (
        isinstance(rec.get("task"), str)
        and isinstance(rec.get("template_id"), str | int)
        and isinstance(rec.get("index"), int)
    )
    return rec if ok else None
