"""Which grids are too small for a budgeted estimate to be honest, and what a run does then.

A budgeted run estimates the unseen cells from the seen ones; its intervals are honest
(cover the full-grid value about 95% of the time) only when every template has been seen
on a few instances and there are enough instances for the model to learn how templates
agree. Below that the intervals can miss both the mean and the spread with nothing to
show it (JNLI, 18 templates × 8 instances at 2x: 16 cells for 18 templates, the intervals
missed the full grid's mean and std).

The decision a reader must know: the floor was measured, not assumed:
`benchmarks/bench_budget_floor.py` cuts real grids (the project's and external ones) and
simulated grids down to T templates × N instances and measures the coverage of the
full-grid mean, std and Sharpe score at each budget (docs/results/budget.md, "Smallest
grids"). Below the floor a run either evaluates the full grid, when no budget would be honest
(fewer instances than the floor, or a single template) and the grid is small anyway, or
refuses and names the smallest budget that is honest (a floor of a few cells per template
is at most a small share of a grid of at least `MIN_INSTANCES` instances, so running that
grid in full would not be cheap).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Measured floor (bench_budget_floor.py): the cells a template must be seen on, on
# average, and the instances the grid must have.
MIN_CELLS_PER_TEMPLATE = 4
MIN_INSTANCES = 32
# A grid with too few instances is run in full when it has at most this many cells (a
# minute or two of a small model); a larger one is refused.
CHEAP_GRID_CELLS = 2000


@dataclass(frozen=True)
class GridVerdict:
    """What a budgeted run does with one task's grid.

    `action`: "estimate" (the budget is honest), "full" (run every cell: the grid is too
    small to estimate but cheap to run) or "refuse"; `message` is the one line a user
    reads for the last two; `minimum_cells` the smallest honest budget in cells (None when
    no budget is honest: too few instances)."""

    action: str
    minimum_cells: int | None
    message: str | None = None


def minimum_cells(n_templates: int, n_instances: int) -> int | None:
    """The fewest cells whose estimate is honest on a T × N grid (None: none is)."""
    if n_instances < MIN_INSTANCES:
        return None
    return min(n_templates * n_instances, MIN_CELLS_PER_TEMPLATE * n_templates)


def grid_verdict(n_templates: int, n_instances: int, cells: int) -> GridVerdict:
    """The verdict on a budget of `cells` on a T × N grid (see the module docstring)."""
    grid = n_templates * n_instances
    if cells >= grid or n_templates < 2:  # one template: no spread, nothing to borrow
        return GridVerdict("estimate", grid)
    shape = f"{n_templates} templates × {n_instances} instances"
    floor = minimum_cells(n_templates, n_instances)
    if floor is None:
        few = f"{shape} is too small to estimate honestly (fewer than {MIN_INSTANCES} instances)"
        if grid <= CHEAP_GRID_CELLS:
            return GridVerdict("full", None, f"{few}: running the full grid ({grid} cells)")
        return GridVerdict(
            "refuse",
            None,
            f"{few}: no budget is honest; run at least {MIN_INSTANCES} instances, "
            "or the full grid without --budget",
        )
    if cells >= floor:
        return GridVerdict("estimate", floor)
    multiple = math.ceil(10 * floor / n_instances) / 10
    return GridVerdict(
        "refuse",
        floor,
        f"{shape}: {cells} cells are too few to estimate honestly; the smallest honest "
        f"budget is {floor} cells ({multiple:g}x, {MIN_CELLS_PER_TEMPLATE} per template)",
    )
