"""Rows of a split that repeat an earlier row: the same text in every field the prompts
read and the same gold, so the same prompts scored against the same answer.

The one decision a reader must know: a few repeats are real data (JMMLU's
college_physics repeats 10 of its 100 rows, public_relations 2 of 109) and are said in
one note (results.json `tasks[T].notes`, the terminal report); when more than
`REFUSE_SHARE` of the rows evaluated repeat another (one question 50 times among 71
rows), the numbers would describe the repeated questions, not the task, and the run is
refused before any model loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hakari.errors import HakariInputError
from hakari.tasks.data import Row, get_path
from hakari.tasks.spec import TaskSpec

REFUSE_SHARE = 0.25  # 2.5 times the most a JMMLU subject repeats (college_physics: 10%)


class DuplicateRows:
    """Counts, over a stream of rows, those that repeat an earlier one."""

    def __init__(self, spec: TaskSpec, fields: Sequence[str]) -> None:
        self._paths = [spec.field_path(name) for name in fields]
        self._first: dict[int, int] = {}  # hash of a row's fields -> its first index
        self.repeats = 0
        self.rows = 0
        self.example: tuple[int, int] | None = None  # (first, a repeat)

    def add(self, index: int, row: Row) -> None:
        key = hash(tuple(_text(row, path) for path in self._paths))
        self.rows += 1
        first = self._first.setdefault(key, index)
        if first != index:
            self.repeats += 1
            self.example = self.example or (first, index)

    def note(self, source: str) -> str | None:
        """One line when some rows repeat; a `HakariInputError` when too many do."""
        if not self.repeats or self.example is None:
            return None
        first, again = self.example
        said = (
            f"{self.repeats} of the {self.rows} rows evaluated repeat an earlier row (the "
            f"same prompt fields and gold; e.g. row {again} repeats row {first})"
        )
        if self.repeats > REFUSE_SHARE * self.rows:
            raise HakariInputError(
                f"{said}: more than {REFUSE_SHARE:.0%}, so the numbers would describe the "
                "repeated questions; remove the repeats",
                file=source,
                field="data",
            )
        return f"{said}: each weighs as many questions in the scores"


def _text(row: Row, path: str) -> Any:
    try:
        value = get_path(row, path)
    except KeyError:
        return None
    return value if isinstance(value, str | int | float | bool | None) else repr(value)
