"""The neutral record every reader produces: one cell (model × task × decoding × template ×
item) with what the source had for it, collected into an `ImportedGrid`.

The one decision a reader must know: **the order of items and templates is canonical, not
the order of the rows.** Items are sorted by their id (numerically when every id of the
task is an integer, else as text), so the statistics do not depend on how a file was
sorted, and every model of a task sees its items in the same order (the bootstrap's draws
index items by position: two models compared on the same items must list them alike).
Templates keep the order in which the input first names them (over all models), which is
the order a hakari export writes them in, so a round trip draws the same replicates.

A cell is added once: a second cell for the same model × task × decoding × template ×
item (× run) is an error naming both lines, never a silent overwrite. Where metrics are
computed from answers and golds, golds are per item: two cells of one item whose golds
differ are an error too (every template is scored against the same gold, as in a native
run).

Answers and golds are labels, compared as text: a number a source wrote (JSON Lines and
Parquet keep types) becomes its text, a whole float as an integer (`1`, `1.0` → `"1"`),
so an answer `1` matches a gold `"1"` (`answer_label`). A list of golds (acceptable
answers) is for exact match and F1; accuracy and MCC compare one label and refuse it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hakari.errors import HakariInputError

_INTEGER = re.compile(r"^-?\d{1,18}$")
# a number as a table writes it: ASCII digits only (`float()` also reads `1_0` as 10, `٣`
# and fullwidth `１` as digits: never a table's intent)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
MISSING = object()  # a cell field the source did not have
LABEL_METRICS = ("accuracy", "mcc")  # compare one answer label with one gold label


@dataclass(frozen=True)
class Origin:
    """Where a cell came from: the file and the 1-based line (or record) in it."""

    file: str
    line: int

    def error(self, message: str, field_name: str | None = None) -> HakariInputError:
        return HakariInputError(f"line {self.line}: {message}", file=self.file, field=field_name)


@dataclass(frozen=True)
class MetricSpec:
    """One metric of an imported task: its key in results.json and how it is scored.

    `scorer` None: the mean of the per-item scores the source gave under `key` (lm-eval's
    `acc`, an inspect scorer, a table's `score` column); else a registered corpus metric
    (accuracy, mcc, exact_match, f1, pearson, spearman) computed from answers and golds.
    """

    key: str
    scorer: str | None = None

    @property
    def from_answers(self) -> bool:
        return self.scorer is not None


@dataclass
class Cell:
    """What the source had for one model × task × decoding × template × item."""

    scores: dict[str, float]  # metric key -> the source's per-item score
    origin: Origin
    answer: Any = None
    gold: Any = MISSING
    output: str | None = None
    prompt: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # kept in samples.jsonl as it is


@dataclass
class TaskInfo:
    """One imported task: its metrics, language and templates (with their levels)."""

    name: str
    metrics: list[MetricSpec]
    language: str = "en"
    qa_mode: str = "first-line"  # EM/F1: golds NFKC-normalised as a native run's default
    templates: dict[str, dict[str, str] | None] = field(default_factory=dict)  # id -> levels


GridKey = tuple[str, str, str]  # (model, task, decoding)


@dataclass
class ImportedGrid:
    """Every cell read, by model × task × decoding, then template, then item."""

    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    cells: dict[GridKey, dict[str, dict[str, list[Cell]]]] = field(default_factory=dict)
    identities: dict[str, dict[str, str]] = field(default_factory=dict)
    golds: dict[tuple[str, str], tuple[Any, Origin]] = field(default_factory=dict)
    runs_seen: bool = False  # some cell came with a run id (several runs of a cell)
    # where the source says in which order models and tasks ran (hakari's own export),
    # their rank; else the order they were first read in
    model_rank: dict[str, int] = field(default_factory=dict)
    task_rank: dict[str, int] = field(default_factory=dict)
    decomposed: set[str] = field(default_factory=set)  # names read in NFC (`nfc`)

    def notes(self) -> list[str]:
        """What reading changed or could not measure, for the import's notes."""
        out = [
            f"task {name!r} has one template: the spread over prompts is not measured (std "
            "0, its interval [0, 0] and the Sharpe score equal to the mean say nothing of "
            "prompt sensitivity)"
            for name, info in self.tasks.items()
            if len(info.templates) == 1
        ]
        if self.decomposed:
            shown = ", ".join(sorted(repr(n) for n in self.decomposed)[:5])
            out.append(
                f"{len(self.decomposed)} name(s) not in Unicode NFC read as their composed "
                f"spelling ({shown}): the two spellings print alike and are one name"
            )
        return out

    def nfc(self, name: str) -> str:
        """A name in Unicode NFC: its composed and decomposed spellings print alike and
        are one name; each one changed is kept for the import's note."""
        composed = unicodedata.normalize("NFC", name)
        if composed != name:
            self.decomposed.add(name)
        return composed

    def task(self, name: str, metrics: Sequence[MetricSpec], origin: Origin) -> TaskInfo:
        """The task `name`, made on first sight; its metrics must agree across inputs."""
        name = self.nfc(name)
        info = self.tasks.get(name)
        if info is None:
            info = self.tasks[name] = TaskInfo(name, list(metrics))
        elif [m.key for m in info.metrics] != [m.key for m in metrics]:
            raise origin.error(
                f"task {name!r} has metrics {[m.key for m in metrics]} here but "
                f"{[m.key for m in info.metrics]} in an earlier input"
            )
        return info

    def add(
        self,
        key: GridKey,
        template: str,
        item: str,
        cell: Cell,
        *,
        levels: dict[str, str] | None = None,
        run: str | None = None,
    ) -> None:
        """One cell; a duplicate (same key, template, item and run) is an error. Names
        are read in NFC (`nfc`)."""
        key = (self.nfc(key[0]), self.nfc(key[1]), self.nfc(key[2]))
        template = self.nfc(template)
        if levels:
            levels = {self.nfc(k): self.nfc(v) for k, v in levels.items()}
        model, task, _ = key
        info = self.tasks[task]
        known = info.templates.get(template, MISSING)
        if known is MISSING:
            info.templates[template] = levels
        elif (levels or None) != known:
            raise cell.origin.error(
                f"template {template!r} has levels {levels or 'none'} here but "
                f"{known or 'none'} before: a template has one level on each dimension",
                "level",
            )
        cell.answer = answer_label(cell.answer)
        if cell.gold is not MISSING:
            cell.gold = answer_label(cell.gold)
            _check_label_gold(cell, info.metrics)
            self._check_gold(task, item, cell, strict=any(m.from_answers for m in info.metrics))
        per_item = self.cells.setdefault(key, {}).setdefault(template, {})
        runs = per_item.setdefault(item, [])
        if run is not None:
            self.runs_seen = True
            cell.extra["run"] = run
        for other in runs:
            if other.extra.get("run") == run:
                again = f" run {run!r}" if run is not None else ""
                raise cell.origin.error(
                    f"duplicate item {item!r} in template {template!r} of model {model!r}, "
                    f"task {task!r}{again} (first at line {other.origin.line} of "
                    f"{other.origin.file}): each cell must appear once",
                    "item",
                )
        runs.append(cell)
        self.identities.setdefault(model, {"name": model})

    def _check_gold(self, task: str, item: str, cell: Cell, *, strict: bool) -> None:
        """An item's gold: one for every template where metrics are computed from it (a
        source's own scores may come with a gold each template words its own way: "A",
        "positive", "yes"; each cell keeps its own in samples.jsonl)."""
        seen = self.golds.get((task, item))
        if seen is None:
            self.golds[(task, item)] = (cell.gold, cell.origin)
        elif strict and seen[0] != cell.gold:
            raise cell.origin.error(
                f"item {item!r} of task {task!r} has gold {cell.gold!r} here but "
                f"{seen[0]!r} at line {seen[1].line} of {seen[1].file}: an item has one gold",
                "gold",
            )

    def check_levels(self) -> None:
        """Levels for every template of a task or for none: a template without them
        would be left out of the per-dimension attribution."""
        for task, info in self.tasks.items():
            given = [t for t, levels in info.templates.items() if levels]
            bare = [t for t, levels in info.templates.items() if not levels]
            if given and bare:
                origin = self._origin(task, bare[0])
                raise origin.error(
                    f"template {bare[0]!r} of task {task!r} has no levels while "
                    f"{given[0]!r} has {info.templates[given[0]]}: give every template its "
                    "levels (or none), else the attribution leaves it out",
                    "level",
                )

    def _origin(self, task: str, template: str) -> Origin:
        """Where a template of `task` was first read."""
        for (_, name, _), per_template in self.cells.items():
            if name == task and template in per_template:
                return next(iter(per_template[template].values()))[0].origin
        raise KeyError(template)

    def gold(self, task: str, item: str) -> Any:
        seen = self.golds.get((task, item))
        return None if seen is None else seen[0]

    def keys(self) -> list[GridKey]:
        """Every model × task × decoding, models and tasks in their ranked order (then in
        the order first read)."""
        first = {key: k for k, key in enumerate(self.cells)}
        models = {m: k for k, (m, _, _) in reversed(list(enumerate(self.cells)))}
        tasks = {t: k for k, (_, t, _) in reversed(list(enumerate(self.cells)))}
        return sorted(
            self.cells,
            key=lambda key: (
                self.model_rank.get(key[0], len(self.cells) + models[key[0]]),
                self.task_rank.get(key[1], len(self.cells) + tasks[key[1]]),
                first[key],
            ),
        )

    def task_names(self) -> list[str]:
        """The tasks in ranked order (then in the order first read)."""
        first = list(dict.fromkeys(t for _, t, _ in self.cells))
        return sorted(first, key=lambda t: (self.task_rank.get(t, len(first)), first.index(t)))


def answer_label(value: Any) -> Any:
    """An answer or gold as a label: a number as its text (a whole float as an integer),
    in a list too; text, None and booleans as they are."""
    if isinstance(value, bool) or not isinstance(value, int | float | list):
        return value
    if isinstance(value, list):
        return [answer_label(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def _check_label_gold(cell: Cell, metrics: Sequence[MetricSpec]) -> None:
    label_metric = next((m for m in metrics if m.scorer in LABEL_METRICS), None)
    if label_metric is not None and isinstance(cell.gold, list | dict):
        raise cell.origin.error(
            f"metric {label_metric.key} compares one label, and the gold is "
            f"{cell.gold!r:.60}: a list of acceptable answers is for exact_match or f1",
            "gold",
        )


def item_order(items: Iterable[str]) -> list[str]:
    """Items in canonical order: numerically when every id is an integer, else as text."""
    unique = list(dict.fromkeys(items))
    if all(_INTEGER.match(i) for i in unique):
        return sorted(unique, key=int)
    return sorted(unique)


def item_id(value: Any, origin: Origin, field_name: str = "item") -> str:
    """An item id as text: strings and integers (a float only when it is whole)."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        raise origin.error(
            f"{field_name} must be a string or an integer, got {value!r:.40}", field_name
        )
    if isinstance(value, float):
        if not value.is_integer():
            raise origin.error(
                f"{field_name} must be a string or an integer, got {value!r}", field_name
            )
        value = int(value)
    text = str(value)
    if not text.strip():
        raise origin.error(f"{field_name} is empty", field_name)
    return text


def score_value(value: Any, origin: Origin, field_name: str) -> float:
    """A per-item score: a finite number (a bool counts as 0/1), as text only in plain
    ASCII decimal notation; anything else, NaN included, is an error naming the field."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        if not _DECIMAL.fullmatch(value.strip(" ")):
            raise origin.error(
                f"score {field_name!r} must be a finite number in plain ASCII decimals (no "
                f"underscores, no other digits), got {value!r:.40}",
                field_name,
            )
        number = float(value)
        if math.isfinite(number):
            return number
    shown = "NaN" if isinstance(value, float) and math.isnan(value) else f"{value!r:.40}"
    raise origin.error(f"score {field_name!r} must be a finite number, got {shown}", field_name)


def label(value: Any, origin: Origin, field_name: str) -> str:
    """A model, task or template name: non-empty text (numbers are written as text)."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        raise origin.error(f"{field_name} must be text, got {value!r:.40}", field_name)
    text = str(value)
    if not text.strip():
        raise origin.error(f"{field_name} is empty", field_name)
    if len(text) > 500:
        raise origin.error(f"{field_name} is longer than 500 characters", field_name)
    hidden = next((c for c in text if unicodedata.category(c) in _HIDDEN), None)
    if hidden is not None:
        raise origin.error(
            f"{field_name} {text!r:.60} holds the invisible character U+{ord(hidden):04X} "
            f"({unicodedata.name(hidden, 'a control character')}): two names that print "
            "alike would be different templates",
            field_name,
        )
    if text != text.strip():
        raise origin.error(
            f"{field_name} {text!r:.60} begins or ends with a space (a space after a CSV "
            "comma?): it would be another name than the one without",
            field_name,
        )
    return text


# Control characters (NUL, newline, ...) and format characters (zero-width spaces and
# joiners, bidirectional overrides): a name holding one prints like another name, or
# reorders the text around it in a report.
_HIDDEN = frozenset({"Cc", "Cf"})
