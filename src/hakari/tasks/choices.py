"""Multiple choice as an answer type: `answer_type: choice` with a `choices:` block.

The choices of an instance come from a list field (`field: choices`, `count: 4`) or from
columns (`columns: [A, B, C, D]`); the gold (the task's `target`) is a letter (`A`..), a
0-based index or the text of the right choice (`gold: letter | index | text`).

The expanded form is what everything else sees: a choice task is a label task whose
labels are the choice indices 0..k-1 (a label task may also declare `choices:`; its
labels then name the choices in order, e.g. CommonsenseQA's A-E). Each row gets the
fields `choice_0`..`choice_{k-1}` (the choice texts) and `gold_index` (the gold as an
index), so templates, hand-written
or generated, read `{choice_0}` and map their answers to indices, and the runner,
extraction, log-likelihood and the budgeted design need nothing new. `uniform_guess_rate`
gives the 1/k baseline of each instance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hakari.errors import HakariInputError

GOLD_FIELD = "gold_index"
LETTERS = [chr(ord("A") + i) for i in range(26)]


def choice_field(i: int) -> str:
    return f"choice_{i}"


class ChoiceSpec(BaseModel):
    """Where an instance's choices and its gold come from."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    field: str | None = None  # a list field (dotted path)
    count: int | None = Field(default=None, ge=2, le=26)  # its length (every row)
    columns: list[str] | None = Field(default=None, min_length=2, max_length=26)
    # rows may have fewer choices, down to this many (`count`/`columns` is then the most):
    # a shorter list, or trailing columns empty or absent (ARC-style data, mixed files)
    min_count: int | None = Field(default=None, ge=2, le=26)
    gold: Literal["letter", "index", "text", "label"] = "letter"
    gold_field: str = ""  # the task's `target` as written (filled by `expand_raw`)
    # a label task with choices (`gold: label`): its labels as text, in choice order
    labels: list[str] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ChoiceSpec:
        if self.labels is not None and len(self.labels) != self.k:
            raise ValueError(f"`labels` has {len(self.labels)} labels for {self.k} choices")
        if (self.field is None) == (self.columns is None):
            raise ValueError("`choices` needs either `field` (a list field) or `columns`")
        if self.field is not None and self.count is None:
            raise ValueError("`choices.field` needs `count`, the number of choices of every row")
        if self.min_count is not None and self.min_count > self.k:
            raise ValueError(f"`min_count` {self.min_count} is above the {self.k} choices")
        return self

    @property
    def fixed(self) -> bool:
        """Every row has k choices (no `min_count` below k)."""
        return self.min_count is None or self.min_count == self.k

    def count_text(self) -> str:
        """The rows' number of choices as a message says it: `4` or `3–5`."""
        return str(self.k) if self.fixed else f"{self.min_count}–{self.k}"

    @property
    def k(self) -> int:
        if self.columns is not None:
            return len(self.columns)
        assert self.count is not None
        return self.count


def expand_raw(raw: dict[str, Any]) -> dict[str, Any]:
    """A task file's mapping with `answer_type: choice` as the label task it stands for;
    a label task's `choices` told its labels (choice i has label i, the gold is a label);
    anything else unchanged (also an already expanded mapping)."""
    choices = raw.get("choices")
    if raw.get("answer_type") == "label" and isinstance(choices, dict) and "target" in raw:
        if "gold_field" in choices:
            return raw
        if choices.get("gold", "label") != "label":
            raise ValueError("a label task's choices take their gold from its labels: drop `gold`")
        labels = [str(x) for x in raw.get("labels") or []]
        out = dict(raw)
        out["choices"] = {
            **choices,
            "gold": "label",
            "gold_field": str(raw["target"]),
            "labels": labels,
        }
        return out
    if raw.get("answer_type") != "choice":
        return raw
    choices = raw.get("choices")
    if not isinstance(choices, dict):
        raise ValueError("answer_type 'choice' needs a `choices:` mapping (field or columns)")
    if "target" not in raw:
        return raw  # pydantic names the missing field
    spec = ChoiceSpec.model_validate({**choices, "gold_field": str(raw["target"])})
    out = dict(raw)
    out["answer_type"] = "label"
    out["labels"] = list(range(spec.k))
    out["target"] = GOLD_FIELD
    out["choices"] = spec.model_dump()
    out.setdefault("fallback", {"kind": "first_label"})
    return out


Lookup = Callable[[dict[str, Any], str], Any]  # `data.get_path`: a dotted field of a row


def normalize_rows(
    spec: ChoiceSpec, rows: Iterable[dict[str, Any]], get_path: Lookup
) -> Iterator[dict[str, Any]]:
    """Each row with `choice_i` and `gold_index` added (one error per bad row). A label
    task's rows (`gold: label`) that cannot be read as choices pass unchanged: the label
    task's own checks name the missing field or the gold outside its labels, and a
    generated template's `{choice_i}` is then a missing field of that row."""
    for i, row in enumerate(rows):
        if spec.gold == "label":
            try:
                yield _normalized(spec, row, i, get_path)
            except HakariInputError:
                yield row
            continue
        yield _normalized(spec, row, i, get_path)


def _normalized(spec: ChoiceSpec, row: dict[str, Any], i: int, get_path: Lookup) -> dict[str, Any]:
    texts = _choice_texts(spec, row, i, get_path)
    try:
        raw_gold = get_path(row, spec.gold_field)
    except KeyError:
        raise HakariInputError(
            f"row {i} has no gold field {spec.gold_field!r}", field="target", row=i
        ) from None
    out = dict(row)
    out.update({choice_field(j): t for j, t in enumerate(texts)})
    out[GOLD_FIELD] = gold_index(spec, raw_gold, texts, i)
    return out


def _choice_texts(spec: ChoiceSpec, row: dict[str, Any], i: int, get_path: Lookup) -> list[str]:
    if spec.columns is not None:
        values = [_column(spec, row, c, i, get_path) for c in spec.columns]
        while not spec.fixed and values and _absent(values[-1]):
            values.pop()  # a row with fewer choices leaves its last columns empty
        where = "choices.columns"
    else:
        assert spec.field is not None
        try:
            values = get_path(row, spec.field)
        except KeyError:
            raise HakariInputError(
                f"row {i} has no choice field {spec.field!r}", field="choices.field", row=i
            ) from None
        if not isinstance(values, list | tuple):
            raise HakariInputError(
                f"row {i}: choice field {spec.field!r} is not a list", field="choices.field", row=i
            )
        where = "choices.count"
    lowest = spec.k if spec.min_count is None else spec.min_count
    if not lowest <= len(values) <= spec.k:
        raise HakariInputError(
            f"row {i} has {len(values)} choices, the task's `choices` takes {spec.count_text()}",
            field=where if spec.fixed else "choices.min_count",
            row=i,
        )
    # with a per-row count only the last choices may be left out, not one in between
    if any(v is None or (not spec.fixed and _absent(v)) for v in values):
        raise HakariInputError(f"row {i} has an empty (null) choice", field="choices", row=i)
    return [str(v) for v in values]


_MISSING = object()  # a choice column the row does not have (variable counts only)


def _column(spec: ChoiceSpec, row: dict[str, Any], column: str, i: int, get_path: Lookup) -> Any:
    try:
        return get_path(row, column)
    except KeyError:
        if not spec.fixed:
            return _MISSING
        raise HakariInputError(
            f"row {i} has no choice column {column!r} (fields: {', '.join(map(str, row))})",
            field="choices.columns",
            row=i,
        ) from None


def _absent(value: Any) -> bool:
    return value is _MISSING or value is None or (isinstance(value, str) and not value.strip())


def gold_index(spec: ChoiceSpec, raw: Any, texts: list[str], row: int) -> int:
    """The gold as a 0-based choice index."""
    k = len(texts)
    if spec.gold == "letter":
        letter = str(raw).strip()
        if letter in LETTERS[:k]:
            return LETTERS.index(letter)
        wanted = f"a letter A–{LETTERS[k - 1]}"
    elif spec.gold == "index":
        text = str(raw).strip()
        if not isinstance(raw, bool) and text.isdigit() and int(text) < k:
            return int(text)
        wanted = f"an index 0–{k - 1}"
    elif spec.gold == "label":
        assert spec.labels is not None
        if str(raw) in spec.labels[:k]:  # a row with fewer choices: their labels only
            return spec.labels.index(str(raw))
        wanted = f"one of the labels {spec.labels[:k]}"
    else:
        if raw in texts:
            return texts.index(raw)
        wanted = "the text of one of its choices"
    raise HakariInputError(
        f"gold {raw!r} is not {wanted}", field=spec.gold_field or "target", row=row
    )


def uniform_guess_rate(spec: ChoiceSpec, row: dict[str, Any]) -> float:
    """The accuracy of a uniform guess on one instance (a row as `iter_rows` gives it):
    1/k, k its number of choices."""
    k = sum(1 for j in range(26) if choice_field(j) in row)
    if k == 0:
        raise ValueError("not a multiple-choice row (read it with hakari.tasks.data.iter_rows)")
    return 1.0 / k


def uniform_guess_rates(spec: ChoiceSpec, rows: Iterable[dict[str, Any]]) -> list[float]:
    """`uniform_guess_rate` of each row, in order (its mean is the task's 1/k baseline)."""
    return [uniform_guess_rate(spec, row) for row in rows]
