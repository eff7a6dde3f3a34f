"""Helpfulness: the keyword rules of a question, scored as the reference does.

A rule is `{"t": regex}`, `{"and": [rules]}` or `{"or": [rules]}` with an optional
top-level `importance` (default 1.0). The answer gets the best cut length L <= 150 of
d(L) times (1 - importance) for every rule not yet complete within its first L
characters; ties go to the longest cut.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hakari._util.regex import compile_regex

HELPFULNESS_WINDOW = 200  # the reference scores answer[:200]
NOT_FOUND = 9999
_CUT_DISCOUNTS = np.array([1 - max(i - 100, 0) / 50 for i in range(151)], dtype=np.float64)


def rule_position(answer: str, rule: dict[str, Any]) -> tuple[int, str]:
    """Where the rule is first complete (end of the leftmost match; 9999 if never) and its
    name: the pattern for `t`, the deciding child's name for `and` (latest) / `or` (earliest)."""
    if "t" in rule:
        found = compile_regex(rule["t"]).search(answer)  # linear time: rules are user input
        return (found.end if found else NOT_FOUND), rule.get("name", rule["t"])
    if "and" in rule:
        children = sorted((rule_position(answer, c) for c in rule["and"]), key=lambda x: -x[0])
        return children[0][0], rule.get("name", children[0][1])
    if "or" in rule:
        children = sorted((rule_position(answer, c) for c in rule["or"]), key=lambda x: x[0])
        return children[0][0], rule.get("name", children[0][1])
    raise ValueError(f"invalid keyword rule: {rule}")


def score_helpfulness(
    answer: str, rules: list[dict[str, Any]]
) -> tuple[float, list[tuple[str, float]]]:
    """The unrounded helpfulness of `answer` and the reference's list of what cost points:
    `(rule name, 1 - importance)` for rules unmet at the chosen cut, then `("N字超過", d)`."""
    text = answer[:HELPFULNESS_WINDOW]
    cuts = _CUT_DISCOUNTS[: min(len(text) + 1, len(_CUT_DISCOUNTS))].copy()
    matched: list[tuple[int, str, float]] = []
    for rule in rules:
        position, name = rule_position(text, rule)
        factor = 1 - rule.get("importance", 1.0)
        cuts[: min(len(cuts), position)] *= factor
        matched.append((position, name, factor))
    best = len(cuts) - 1 - int(np.argmax(cuts[::-1]))  # ties go to the longest cut
    value = float(cuts[best])
    failed = [(name, factor) for position, name, factor in matched if best < position]
    if best > 100 and value > 0:
        failed.append((f"{best - 100}字超過", 1 - max(best - 100, 0) / 50))
    return value, failed
