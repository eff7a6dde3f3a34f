"""The options of `hakari import` (one record for the CLI and Python), what every reader
returns (`Reading`), and the files an import may read.

Every option is checked here or by the reader that uses it, before any statistic; each
problem is one `HakariInputError` naming the option, or the file, line and field.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hakari._util import checks
from hakari._util.infiles import open_input
from hakari.errors import HakariInputError
from hakari.interop.cells import ImportedGrid, MetricSpec
from hakari.results.vocab import Language

SOURCES = ("lm-eval", "inspect", "eee", "table", "grid")
LANGUAGES: tuple[Language, ...] = ("en", "ja")
QA_MODES = ("first-line", "paper")
MAX_JSON_BYTES = 1 << 30  # one JSON document (a log, a grid, decompressed): 1 GiB


@dataclass(frozen=True)
class ImportOptions:
    """How a source maps onto hakari's models, tasks, templates, items and metrics.

    `templates`: a pattern over the source's task names with `{template}` (and optionally
    `{task}`) marking the parts that name the template and the hakari task, e.g.
    `noreval_{task}_p{template}`; `task`: the hakari task the matched names belong to
    (when the pattern has no `{task}`); `group`: an lm-eval group whose subtasks are the
    templates. `metrics`: corpus metrics computed from answers and golds; `scores`: the
    source's per-item scores used as metrics (lm-eval metric names, inspect scorers, table
    columns). The rest are the table's column names and the statistics' settings.
    """

    templates: str | None = None
    task: str | None = None
    group: str | None = None
    metrics: tuple[str, ...] = ()
    scores: tuple[str, ...] = ()
    lm_filter: str | None = None
    model: str | None = None
    decoding: str | None = None
    language: Language | None = None
    qa_mode: str = "first-line"
    columns: dict[str, str] = field(default_factory=dict)  # role -> column name
    run: str | None = None
    levels: Path | None = None
    score_range: tuple[float, float] | None = None  # per-item scores' range (`scale`)

    def check(self) -> None:
        if self.language is not None:
            checks.choice(self.language, "--language", LANGUAGES)
        checks.choice(self.qa_mode, "--qa-mode", QA_MODES)
        inspect_forms = ("arg:", "metadata:")  # inspect_ai: a task argument, sample metadata
        if (
            self.templates is not None
            and not self.templates.startswith(inspect_forms)
            and "{template}" not in self.templates
        ):
            raise HakariInputError(
                f"{self.templates!r} has no {{template}}: say which part of a task name is "
                "the template (e.g. noreval_{task}_p{template})",
                field="--templates",
            )
        for name in self.metrics:
            from hakari.scoring import corpus

            if name not in corpus.names() or name.startswith("interop_"):
                known = [n for n in corpus.names() if not n.startswith("interop_")]
                raise HakariInputError(
                    f"unknown metric {name!r}{checks.did_you_mean(name, known)} "
                    f"(computed from answers and golds: {', '.join(known)}); a source's "
                    "own per-item score is given with --score",
                    field="--metric",
                )
        overlap = set(self.metrics) & set(self.scores)
        if overlap:
            raise HakariInputError(
                f"{sorted(overlap)[0]!r} is given both as --metric and --score", field="--score"
            )

    def recorded(self) -> dict[str, Any]:
        """The options given, for results.json's `imported.options`."""
        out: dict[str, Any] = {}
        for name in (
            "templates",
            "task",
            "group",
            "lm_filter",
            "model",
            "decoding",
            "language",
            "run",
        ):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.metrics:
            out["metrics"] = list(self.metrics)
        if self.scores:
            out["scores"] = list(self.scores)
        if self.columns:
            out["columns"] = dict(self.columns)
        if self.levels is not None:
            out["levels"] = str(self.levels)
        if self.score_range is not None:
            out["score_range"] = list(self.score_range)
        out["qa_mode"] = self.qa_mode
        return out

    def metric_specs(self, default_scores: Sequence[str]) -> list[MetricSpec]:
        """The metrics of a task: `--metric` ones (from answers), then `--score` ones,
        else the source's `default_scores`."""
        scores = self.scores or (() if self.metrics else tuple(default_scores))
        return [MetricSpec(m, m) for m in self.metrics] + [MetricSpec(s) for s in scores]


SCORE_PREFIX = "score:"  # in a list of metrics: a per-item score, not a corpus metric


def listed_metrics(listed: str, origin: Any, where: str) -> list[MetricSpec]:
    """A task's metrics as hakari's export lists them ("accuracy,mcc,score:acc"): a
    registered corpus metric is computed from answers and golds, `score:KEY` is the
    per-item score KEY the source gave."""
    from hakari.scoring import corpus

    specs = []
    for name in (m.strip() for m in str(listed).split(",") if m.strip()):
        if name.startswith(SCORE_PREFIX) and name[len(SCORE_PREFIX) :]:
            specs.append(MetricSpec(name[len(SCORE_PREFIX) :]))
        elif name in corpus.names() and not name.startswith("interop_"):
            specs.append(MetricSpec(name, name))
        else:
            raise origin.error(f"unknown metric {name!r} in the list of metrics", where)
    if not specs:
        raise origin.error("the list of metrics is empty", where)
    return specs


@dataclass
class Reading:
    """What a reader returns: the grid, the files it read, the producer versions they
    record, and notes for results.json."""

    grid: ImportedGrid
    files: list[Path] = field(default_factory=list)
    producers: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def expand(paths: Iterable[Path], patterns: Sequence[str], what: str) -> list[Path]:
    """The files of `paths`: a file as it is, a folder's files matching `patterns`
    (recursively, sorted); a path that does not exist, or a folder with none, is an error."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted({p for pattern in patterns for p in path.rglob(pattern) if p.is_file()})
            if not found:
                raise HakariInputError(
                    f"holds no {what} ({', '.join(patterns)})", file=str(path), field="PATH"
                )
            out += found
        elif path.exists():
            out.append(path)
        else:
            raise HakariInputError("no such file or folder", file=str(path), field="PATH")
    return list(dict.fromkeys(out))


def read_bounded(path: Path, limit: int = MAX_JSON_BYTES) -> bytes:
    """A whole file (gzip-decompressed when it ends in .gz), at most `limit` bytes: a
    larger one (or a link to /dev/zero) is one error, never a read without end."""
    import gzip

    try:
        if path.suffix == ".gz":
            with open_input(path, field="PATH") as raw, gzip.open(raw, "rb") as fh:
                data = fh.read(limit + 1)
        else:
            with open_input(path, field="PATH") as fh:
                data = fh.read(limit + 1)
    except (OSError, EOFError) as exc:
        raise HakariInputError(f"cannot read: {exc}", file=str(path)) from None
    if len(data) > limit:
        raise HakariInputError(
            f"larger than {limit >> 20} MiB: not a file this source reads whole", file=str(path)
        )
    return data


def read_json(path: Path) -> Any:
    """A JSON document read with the size bound; invalid JSON is one error naming the
    line and column."""
    import json

    from hakari._util.jsonl import RepeatedKeyError, loads_strict

    data = read_bounded(path)
    try:
        return loads_strict(data.decode("utf-8"))
    except RepeatedKeyError as exc:
        raise HakariInputError(str(exc), file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise HakariInputError(f"not UTF-8 text (byte {exc.start})", file=str(path)) from None
    except json.JSONDecodeError as exc:
        raise HakariInputError(
            f"line {exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})", file=str(path)
        ) from None
