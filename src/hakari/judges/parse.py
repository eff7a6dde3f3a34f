"""Strict reading of a judge's verdict: the last well-formed one, range-checked.

Two formats:

* `csv_pair` (IFTEval A.3): two numbers separated by a comma, e.g. `7,5` or `7.5, 8`.
  A number glued to a `/` (`8/10,7/10`), a letter or another digit does not count.
* `bracket` (MT-bench, pfgen): `[[7]]` or `[[7.5]]`, usually after `Rating:`.

Decimals are accepted; the last match in the text is the verdict (judges reason first);
a verdict outside the prompt's scale is a failure, not clipped. A failure is a `ParsedVerdict`
with `values=None` and a reason ("empty output", "no verdict ...", "7 outside 1-10"),
never a 0. Nothing here evaluates model text (IFTEval's CoNLL parser ran `eval()`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_NUM = r"(\d{1,3}(?:\.\d+)?)"
_CSV_PAIR = re.compile(rf"(?<![\w./,]){_NUM}\s*,\s*{_NUM}(?![\w./,]|\.\d)")
_BRACKET = re.compile(rf"\[\[\s*{_NUM}\s*\]\]")


@dataclass(frozen=True)
class ParsedVerdict:
    values: tuple[float, ...] | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.values is not None


def _fmt(x: float) -> str:
    return f"{x:g}"


def parse_verdict(text: str, verdict: str, scale: tuple[float, float]) -> ParsedVerdict:
    low, high = scale
    if not text.strip():
        return ParsedVerdict(None, "empty output")
    if verdict == "csv_pair":
        matches = _CSV_PAIR.findall(text)
        if not matches:
            return ParsedVerdict(None, "no verdict of the form 'score1,score2'")
        values = tuple(float(v) for v in matches[-1])
    elif verdict == "bracket":
        found = _BRACKET.findall(text)
        if not found:
            return ParsedVerdict(None, "no verdict of the form '[[rating]]'")
        values = (float(found[-1]),)
    else:
        raise ValueError(f"no parser for verdict format {verdict!r}")
    bad = [v for v in values if not math.isfinite(v) or not low <= v <= high]
    if bad:
        shown = ",".join(_fmt(v) for v in values)
        return ParsedVerdict(None, f"verdict {shown} outside {_fmt(low)}-{_fmt(high)}")
    return ParsedVerdict(values)
