"""Which template × instance cells a budgeted run evaluates, in the order it evaluates them.

The design is one fixed order of all T × N cells, so that any budget is a prefix of it:
a budget of B cells runs the first B, a sequential run (`--target-ci`, `--until-decided`)
runs the next slice each round, and a larger budget or the full grid later only adds
cells (the response cache answers the ones already run).

The decision a reader must know: **every instance is seen before any instance is seen
twice** ("levels"). Level j gives every instance its j-th template; within a level,
instances come in a random order that interleaves the gold strata, so a budget that ends
inside a level covers the strata in proportion. Which template an instance gets at a level
is chosen so that, within the instance's stratum, every template is used equally often
at every level (to one), and no instance gets a template twice. Hence at a budget of k×
one template's run every instance is seen under k templates, every template sees about
k·N/T instances in every stratum, and pairs of templates share instances at random (the
completion model learns how templates agree from those shared instances; see
`completion`). Why not random cells: random cells leave
some instances unseen and others seen many times, and some templates with fewer cells in
a stratum than others; why not all templates on a subset of instances (what `--sample`
does): the instance sample then adds its full variance to the mean and every template
score, whereas the design here sees every instance and only the template × instance
residual is left to estimate (measured in `benchmarks/bench_budget.py`).

The order depends only on (T, the strata, seed): the same for every model, so several
models run on the same cells and their comparison is paired.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hakari.aggregate.budget.records import DesignRecord

_MULTIPLE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*[xX×]\s*$")


@dataclass(frozen=True)
class Budget:
    """A budget as the user wrote it: a multiple of one template's run (`2x`), a fraction
    of the grid (`0.1`) or a number of cells (`5000`)."""

    kind: str  # "multiple" | "fraction" | "cells"
    value: float

    def cells(self, n_templates: int, n_instances: int) -> int:
        """How many cells this budget buys on a T × N grid (at least 1, at most T × N)."""
        grid = n_templates * n_instances
        if self.kind == "multiple":
            wanted = self.value * n_instances
        elif self.kind == "fraction":
            wanted = self.value * grid
        else:
            wanted = self.value
        return int(min(grid, max(1, math.ceil(wanted - 1e-9))))

    def __str__(self) -> str:
        if self.kind == "multiple":
            return f"{self.value:g}x"
        if self.kind == "fraction":  # with its point: "1.0" is the grid, "1" one cell
            text = f"{self.value:g}"
            if "e" in text:
                text = f"{self.value:.{12 - math.floor(math.log10(self.value))}f}".rstrip("0")
            return text if "." in text else f"{text}.0"
        return str(int(self.value))


def parse_budget(text: str) -> Budget:
    """`2x` / `1.5x` (multiple of one template's run), `0.1` (fraction of the grid, in
    (0, 1]) or `5000` (cells). Raises ValueError with the rule on anything else."""
    rule = (
        "expected a multiple of one template's run such as 2x, a fraction of the grid in "
        "(0, 1] such as 0.1, or a whole number of cells such as 5000"
    )
    match = _MULTIPLE.match(text)
    if match:
        value = float(match.group(1))
        if value <= 0:
            raise ValueError(f"{text!r}: a multiple must be above 0; {rule}")
        return Budget("multiple", value)
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r}: {rule}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{text!r}: must be above 0; {rule}")
    if value <= 1 and "." in text:
        return Budget("fraction", value)
    if value == int(value) and "." not in text:
        return Budget("cells", value)
    raise ValueError(f"{text!r}: {rule}")


@dataclass(frozen=True, eq=False)
class Design:
    """The evaluation order of every cell of a T × N grid.

    `order` is (T × N, 2): row r is the (template position, instance position) run r-th;
    rows j·N to (j+1)·N - 1 are level j (every instance once).
    """

    n_templates: int
    n_instances: int
    seed: int
    order: np.ndarray
    name: str = "balanced-levels"

    @property
    def size(self) -> int:
        return self.n_templates * self.n_instances

    def mask(self, n_cells: int) -> np.ndarray:
        """(T, N) bool: the cells of the first `n_cells` rows."""
        mask = np.zeros((self.n_templates, self.n_instances), dtype=bool)
        head = self.order[: max(0, min(n_cells, self.size))]
        mask[head[:, 0], head[:, 1]] = True
        return mask

    def record(self, n_cells: int) -> DesignRecord:
        run = int(min(n_cells, self.size))
        return DesignRecord(
            name=self.name,
            seed=self.seed,
            cells_run=run,
            grid_size=self.size,
            fraction=run / self.size,
        )


def balanced_design(n_templates: int, strata: Sequence[int] | np.ndarray, seed: int) -> Design:
    """The cell order described in the module docstring.

    `strata[i]` is the stratum of instance i (the gold label's code for label tasks, a
    gold bin for scores, 0 when there is nothing to stratify on). Within a stratum the
    (shuffled) instances form blocks of T; instance r of block b gets, at level j, template
    `perm_b[(r + shift_b[j]) mod T]`, with `perm_b` a random order of the templates and
    `shift_b` a random permutation of 0..T-1: each instance gets every template once,
    each template is given once per block and level (so per stratum and level the counts
    differ by at most one), and the pairs of templates that share an instance differ from
    block to block.
    """
    if n_templates < 1:
        raise ValueError("a design needs at least one template")
    strata_arr = np.asarray(strata, dtype=np.int64)
    n = strata_arr.size
    if n < 1:
        raise ValueError("a design needs at least one instance")
    rng = np.random.default_rng(seed)
    _, stratum_code = np.unique(strata_arr, return_inverse=True)
    n_strata = int(stratum_code.max()) + 1
    template_at = np.empty((n_templates, n), dtype=np.int64)  # [level, instance]
    for s in range(n_strata):
        members = np.flatnonzero(stratum_code == s)
        rng.shuffle(members)
        for start in range(0, members.size, n_templates):
            block = members[start : start + n_templates]
            perm = rng.permutation(n_templates)
            shift = rng.permutation(n_templates)
            r = np.arange(block.size)
            template_at[:, block] = perm[(r[None, :] + shift[:, None]) % n_templates]
    within_level = np.asarray(_interleaved_order(stratum_code, n_strata, rng), dtype=np.int64)
    levels = np.repeat(np.arange(n_templates), n)
    instances = np.tile(within_level, n_templates)
    order = np.stack([template_at[levels, instances], instances], axis=1)
    return Design(n_templates, n, seed, order)


def _interleaved_order(
    stratum_code: np.ndarray, n_strata: int, rng: np.random.Generator
) -> list[int]:
    """All instances in a random order in which every prefix holds the strata in about
    their proportions: each stratum's instances are shuffled and spread evenly over [0, 1),
    then all are sorted by that position."""
    keys = np.empty(stratum_code.size)
    for s in range(n_strata):
        members = np.flatnonzero(stratum_code == s)
        rng.shuffle(members)
        offset = rng.random()
        keys[members] = (np.arange(members.size) + offset) / members.size
    jitter = rng.random(stratum_code.size) * 1e-9
    return [int(i) for i in np.argsort(keys + jitter, kind="stable")]
