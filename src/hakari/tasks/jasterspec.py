"""The `data.jaster` block of a task file: a set of llm-jp-eval's "jaster" read from the
files its authors ship, with llm-jp-eval v1.3.0's preprocessing stated as data.

A set is one or more *pools* of rows. Each pool is read from its files by a reader
(`tasks/readers/`: one module per file format), filtered (`keep` / `drop` on a field's
value), optionally shuffled with `random.seed(42)` exactly as llm-jp-eval's processors
do, and cut into splits at cumulative fractions (`int(len(pool) * fraction)`, the
processors' slicing). Each row becomes llm-jp-eval's `Sample`: `input` from the `input`
format string over the row's fields, `output` the `output` field. The rows of the eval
split also carry `instruction` and one `shots_N` field for each N in `shots`: the first
N samples of the `shots_split` written as llm-jp-eval writes few-shot examples, so a
template states the protocol's prompt as plain text (see `tasks/jaster.py`).
"""

from __future__ import annotations

import string
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Reader = Literal[
    "tsv",
    "csv",
    "mgsm_tsv",
    "json",
    "niilc_xml",
    "jsem_xml",
    "mawps_shots",
    "mawps_test",
    "wiki_reading",
    "wiki_dependency",
    "wiki_ner",
    "wiki_pas",
    "wiki_coreference",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class JasterPool(_Strict):
    """Rows read from `files` (in order), filtered, maybe shuffled, then cut."""

    files: list[str] = Field(min_length=1)
    reader: Reader
    # field -> the values a row must have to stay / the values that drop it
    keep: dict[str, list[str]] = Field(default_factory=dict)
    drop: dict[str, list[str]] = Field(default_factory=dict)
    shuffle: bool = False  # random.seed(42); random.shuffle(rows), as the processors do
    # split -> cumulative end fraction, in order; the last is 1.0
    splits: dict[str, float] = Field(min_length=1)

    @field_validator("splits")
    @classmethod
    def _cuts(cls, v: dict[str, float]) -> dict[str, float]:
        ends = list(v.values())
        if any(not 0.0 < e <= 1.0 for e in ends) or ends != sorted(ends) or ends[-1] != 1.0:
            raise ValueError("split ends must rise within (0, 1] and the last must be 1.0")
        return v


class JasterSource(_Strict):
    input: (
        str  # a format string over the reader's fields, e.g. "前提：{premise}\n仮説：{hypothesis}"
    )
    output: str  # the field that holds the answer
    instruction: str = Field(min_length=1)
    pools: list[JasterPool] = Field(min_length=1)
    shots: list[int] = Field(default_factory=lambda: [0, 2, 4])
    shots_split: str = "train"
    # llm-jp-eval's max_num_samples (and Nejumi's): a run reads the eval split's first N
    # items unless its --limit says otherwise (null: every item)
    max_items: int | None = Field(default=100, ge=1)

    @field_validator("input")
    @classmethod
    def _input_fields(cls, v: str) -> str:
        for _, name, spec, conversion in string.Formatter().parse(v):
            if name is not None and (not name.isidentifier() or spec or conversion):
                raise ValueError(f"input placeholder {{{name}}} must be a plain field name")
        return v

    @field_validator("shots")
    @classmethod
    def _shot_counts(cls, v: list[int]) -> list[int]:
        if any(n < 0 for n in v) or len(set(v)) != len(v):
            raise ValueError("shots must be distinct counts >= 0")
        return v

    @model_validator(mode="after")
    def _splits_once(self) -> JasterSource:
        seen: set[str] = set()
        for pool in self.pools:
            twice = seen & set(pool.splits)
            if twice:
                raise ValueError(f"split {sorted(twice)[0]!r} is cut from two pools")
            seen |= set(pool.splits)
        return self

    def split_names(self) -> set[str]:
        return {name for pool in self.pools for name in pool.splits}
