"""The scale of imported per-item scores: the Sharpe score is defined on [0, 1].

The Sharpe score `mean / (alpha * std + 1)` is not scale-free: the same results as
fractions and as percentages can rank two models apart (the `+ 1` weighs a std of 5
points like a std of 0.05). hakari's own metrics are on [0, 1] (MCC and correlations on
[-1, 1], marked `negative_mean` when below 0), so the rule for a source's per-item scores
is: **every score must lie in [0, 1], or the user declares its range** with
`--score-range LO:HI` (a 0–100 table: `0:100`; a reward: its bounds). Declared, every
score is rescaled to [0, 1] by `(score - LO) / (HI - LO)` before any statistic (so the
Sharpe score, intervals, comparisons and samples.jsonl are all on [0, 1]); the range is
recorded in results.json (`imported.options.score_range`) and said in a note, which
`hakari report` prints. A score outside the declared range is an error naming its line.
Scores computed here from answers and golds (`--metric`) are hakari's own and untouched.
"""

from __future__ import annotations

import math

from hakari.errors import HakariInputError
from hakari.interop.cells import ImportedGrid


def parse_range(text: str | None) -> tuple[float, float] | None:
    """`--score-range LO:HI` as two finite numbers, LO < HI."""
    if text is None:
        return None
    low, sep, high = text.partition(":")
    try:
        bounds = (float(low), float(high)) if sep else None
    except ValueError:
        bounds = None
    if bounds is None or not math.isfinite(bounds[1] - bounds[0]) or bounds[0] >= bounds[1]:
        raise HakariInputError(
            f"{text!r} is not LO:HI with finite numbers LO < HI and a finite width HI - LO "
            "(e.g. 0:100)",
            field="--score-range",
        )
    return bounds


def apply_scale(grid: ImportedGrid, score_range: tuple[float, float] | None) -> list[str]:
    """Check every given score against [0, 1] or the declared range, rescaling to [0, 1]
    when a range is declared; returns the note to record (none without a range)."""
    low, high = score_range or (0.0, 1.0)
    for per_template in grid.cells.values():
        for per_item in per_template.values():
            for runs in per_item.values():
                for cell in runs:
                    for key, value in cell.scores.items():
                        if not low <= value <= high:
                            raise cell.origin.error(_outside(key, value, score_range), key)
                        if score_range is not None:
                            cell.scores[key] = (value - low) / (high - low)
    if score_range is None:
        return []
    return [
        f"per-item scores rescaled from [{low:g}, {high:g}] to [0, 1] by (score - {low:g}) / "
        f"{high - low:g} (--score-range): every statistic, the Sharpe score included, is on "
        "[0, 1]"
    ]


def _outside(key: str, value: float, score_range: tuple[float, float] | None) -> str:
    if score_range is not None:
        low, high = score_range
        return f"score {key!r} is {value:g}, outside the declared --score-range {low:g}:{high:g}"
    return (
        f"score {key!r} is {value:g}, outside [0, 1]: the Sharpe score is not scale-free (a "
        "0-100 table ranks models otherwise than the same scores as fractions); declare the "
        "scores' range with --score-range LO:HI (e.g. 0:100) to rescale them to [0, 1]"
    )
