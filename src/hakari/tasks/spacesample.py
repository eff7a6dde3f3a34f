"""Which templates of a prompt space a run takes (`--templates space:N`, `space:all`).

`space:N` is a seeded balanced sample of N distinct templates: every level of every
dimension appears N/L times (±1), the same N templates on every run, model and family
member. The one decision a reader must know: **the sampler's cost grows with N, never
with the space's size** (a space may hold 10^12 templates), and N is bounded:
`space:all` above `ALL_CAP` templates must be asked for by count, and no count above
`MAX_TEMPLATES` is taken (one line, exit 2, before any work).

Up to half the space, each dimension's column is its levels repeated to N and shuffled,
and repeated rows are repaired by swapping one dimension's entries between two rows
(which keeps every column's counts); the repair keeps, per row tuple, the rows holding it,
so a swap costs O(log N) where recounting every row cost O(N). Above half the space, the
sample is the whole product without a balanced sample of the rest (exactly balanced:
the product is, and so is what is left out).
"""

from __future__ import annotations

import heapq
import itertools
import random

from hakari.errors import HakariInputError
from hakari.tasks.spacelevels import Levels
from hakari.tasks.spacespec import SpaceSelection, SpaceSpec

ALL_CAP = 1000  # `space:all` above this many templates must be asked for by count
# The most templates a run takes from a space: the spread over templates is known to
# about 1% of itself from this many (the standard error of a std from T draws is about
# std / sqrt(2T)), and every template costs records (results.json, the bootstrap, the
# reports) and prompts; JMMLU's whole space (9,072) fits.
MAX_TEMPLATES = 10_000
_ENUMERABLE = 100_000  # a space this small may be listed whole (the repair's last resort)


def check_template_count(count: int, *, task: str, file: str | None, field: str) -> None:
    """A task's templates, hand-written or imported, within `MAX_TEMPLATES` (the bound
    of a space's selection): one line naming `field`, before any model or statistic."""
    if count > MAX_TEMPLATES:
        raise HakariInputError(
            f"task {task} has {count:,} templates; a run or an import takes at most "
            f"{MAX_TEMPLATES:,} (the spread over templates is known to about 1% from them): "
            "take a sample of them",
            file=file,
            field=field,
        )


def select_levels(
    space: SpaceSpec, selection: SpaceSelection, *, task: str, file: str
) -> list[Levels]:
    """The levels of each template `selection` asks for (one error naming `--templates`
    when it asks for too many)."""
    size = space.size()
    count = selection.count

    def refuse(message: str) -> HakariInputError:
        return HakariInputError(message, file=file, field="--templates")

    if count is None:
        if size > ALL_CAP:
            whole = f", or ask for all with space:{size}" if size <= MAX_TEMPLATES else ""
            raise refuse(
                f"space:all asks for {size:,} templates of task {task}, more than "
                f"{ALL_CAP:,}: sample with space:N{whole}"
            )
        return all_levels(space)
    if count > size:
        raise refuse(
            f"space:{count} asks for more templates than the space of task {task} holds "
            f"({size:,}); use space:all or space:N with N ≤ {min(size, MAX_TEMPLATES)}"
        )
    if count > MAX_TEMPLATES:
        raise refuse(
            f"space:{count} asks for {count:,} templates of task {task}; a run takes at most "
            f"{MAX_TEMPLATES:,} (the spread over templates is known to about 1% from them): "
            f"sample with space:N, N ≤ {MAX_TEMPLATES}"
        )
    if count == size:
        return all_levels(space)
    return balanced_sample(space, count, space.seed if selection.seed is None else selection.seed)


def all_levels(space: SpaceSpec) -> list[Levels]:
    """Every template's levels, in product order (the first dimension outermost)."""
    dims = list(space.dimensions)
    return [dict(zip(dims, names, strict=True)) for names in _product(space)]


def _product(space: SpaceSpec) -> itertools.product[tuple[str, ...]]:
    return itertools.product(*(list(levels) for levels in space.dimensions.values()))


def balanced_sample(space: SpaceSpec, n: int, seed: int) -> list[Levels]:
    """n distinct templates' levels; each dimension's levels appear n/L times (±1)."""
    size = space.size()
    dims = list(space.dimensions)
    if 2 * n > size:
        left_out = {tuple(lv.values()) for lv in balanced_sample(space, size - n, seed)}
        return [dict(zip(dims, r, strict=True)) for r in _product(space) if r not in left_out]
    rng = random.Random(f"hakari-space:{seed}")
    columns: list[list[str]] = []
    for dim in dims:
        names = list(space.dimensions[dim])
        rng.shuffle(names)  # which levels get the extra appearance when L does not divide n
        col = [names[i % len(names)] for i in range(n)]
        rng.shuffle(col)
        columns.append(col)
    rows = [tuple(col[i] for col in columns) for i in range(n)]
    if not _repair(rows, len(dims), rng, steps=200 * n):
        rows = _fill_distinct(space, rows, rng)
    return [dict(zip(dims, r, strict=True)) for r in rows]


def _repair(rows: list[tuple[str, ...]], n_dims: int, rng: random.Random, *, steps: int) -> bool:
    """Separate repeated rows in place: the first row that repeats another swaps one
    dimension's entry with a random row, until none repeats (True) or `steps` swaps were
    made (False). Which rows hold each tuple is kept as the rows change, and the repeated
    rows wait in a heap (lazily: an entry whose row no longer repeats is dropped when it
    comes up), so the first repeat is found in O(log n)."""
    n = len(rows)
    holders: dict[tuple[str, ...], set[int]] = {}
    for i, row in enumerate(rows):
        holders.setdefault(row, set()).add(i)
    repeats = [i for i, row in enumerate(rows) if len(holders[row]) > 1]  # sorted: a heap

    def move(i: int, new: tuple[str, ...]) -> None:
        old = rows[i]
        if old == new:
            return
        holders[old].discard(i)
        if not holders[old]:
            del holders[old]
        rows[i] = new
        now = holders.setdefault(new, set())
        now.add(i)
        if len(now) > 1:  # every holder repeats; the others may have left the heap
            for k in now if len(now) == 2 else (i,):
                heapq.heappush(repeats, k)

    for _ in range(steps):
        while repeats and len(holders[rows[repeats[0]]]) < 2:
            heapq.heappop(repeats)
        if not repeats:
            return True
        first = repeats[0]
        j, d = rng.randrange(n), rng.randrange(n_dims)
        a, b = list(rows[first]), list(rows[j])
        a[d], b[d] = b[d], a[d]
        move(first, tuple(a))
        move(j, tuple(b))
    return False


def _fill_distinct(
    space: SpaceSpec, rows: list[tuple[str, ...]], rng: random.Random
) -> list[tuple[str, ...]]:
    """Swaps did not separate every repeat: replace the repeats by templates not yet
    taken (balance then holds only approximately): from the whole product shuffled where
    the space is small enough to list, else drawn at random (at most half the space is
    taken here, so a draw is new at least every other time)."""
    seen: set[tuple[str, ...]] = set()
    unique = [r for r in rows if not (r in seen or seen.add(r))]  # type: ignore[func-returns-value]
    if space.size() <= _ENUMERABLE:
        pool = list(_product(space))
        rng.shuffle(pool)
        unique.extend(p for p in pool if p not in seen)
        return unique[: len(rows)]
    names = [list(levels) for levels in space.dimensions.values()]
    while len(unique) < len(rows):
        row = tuple(rng.choice(level_names) for level_names in names)
        if row not in seen:
            seen.add(row)
            unique.append(row)
    return unique
