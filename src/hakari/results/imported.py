"""results.json's `imported`: where the numbers of a run made by `hakari import` came from
(the source, each file read with its hash, the producer versions found in the logs, the
options that mapped the source onto tasks and templates, and every cell left out and why).

Written only for imported runs: a run of `hakari run` has no such key. The statistics of an
imported run are computed by the same code as a native run's (`hakari.interop`); this
record is what makes them checkable against the files they came from.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hakari._util.records import Record


class SourceFile(Record):
    """One file read by the import."""

    path: str
    """The path as given (or found under a folder given), on the machine that imported it."""
    sha256: str
    """sha256 of the file's bytes (hex)."""
    bytes: int
    """Its size in bytes."""


class DroppedCells(Record):
    """Cells of one model × task × decoding that the statistics do not use."""

    model: str
    """The model (as keyed in `models`)."""
    task: str
    """The task."""
    decoding: str
    """The decoding (as keyed in `decodings`)."""
    missing_cells: int
    """Template × item cells of the task's grid this model has no score for."""
    dropped_items: list[str] = Field(default_factory=list)
    """Items left out of the statistics because some template lacks them (the default:
    every template is scored on the same items); empty with `--fill`."""
    missing_by_template: dict[str, int] = Field(default_factory=dict)
    """Template -> how many of the task's items it lacks (templates lacking none left out)."""
    filled: bool = False
    """True when the missing cells were estimated (`--fill`): every number of this
    decoding is then marked estimated."""


class ImportRecord(Record):
    """`imported` of results.json: the provenance of an imported run."""

    source: str
    """The source kind: "lm-eval", "inspect", "eee", "table" or "grid"."""
    files: list[SourceFile]
    """Every file read, in the order read."""
    producers: dict[str, str] = Field(default_factory=dict)
    """Producer -> the version the files record (e.g. "lm_eval": "0.4.13",
    "inspect_ai": "0.3.160"); empty when the files record none."""
    options: dict[str, Any] = Field(default_factory=dict)
    """The options that mapped the source onto hakari's tasks, templates, items and
    metrics (template pattern, metric columns, filter, language...), as given."""
    dropped: list[DroppedCells] = Field(default_factory=list)
    """Each model × task × decoding with missing cells (none when every grid was complete)."""
    notes: list[str] = Field(default_factory=list)
    """What else the import decided, one sentence each (comparisons refused for too few
    shared items, runs averaged per cell...)."""
