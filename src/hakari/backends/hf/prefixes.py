"""The token prefixes that rows share, as groups of neighbours and as a tree.

A batch's rows (a prompt space's prompts, a prompt's multi-token continuations) share
token prefixes: a space's instruction, a template's instruction and shots, a whole
prompt under its continuations. `prefix_tree` finds them at every level, so the tree
walk (`tree.py`) runs each shared part once; `prefix_groups` gives one level of it (the
two-pass prefill's heads, `prefill.py`). Only the rows' tokens are read here: no model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SHARED_MIN = 16  # tokens: a shorter common prefix is not worth a pass of its own


def prefix_groups(
    rows: Sequence[Sequence[int]], keep: int, shared_min: int = SHARED_MIN
) -> list[tuple[int, list[int]]]:
    """Consecutive rows that share a token prefix of at least `shared_min` tokens, as
    (prefix length, row positions); the prefix leaves each row at least `keep` tokens
    (the positions whose log-probs are read). A row that shares with no neighbour comes
    as (0, [position])."""
    groups: list[tuple[int, list[int]]] = []
    for i, row in enumerate(rows):
        if groups:
            shared, members = groups[-1]
            first = rows[members[0]]
            limit = min(shared, len(row) - keep)
            common = 0
            while common < limit and first[common] == row[common]:
                common += 1
            if common >= shared_min:
                groups[-1] = (common, [*members, i])
                continue
        groups.append((max(len(row) - keep, 0), [i]))
    return [(shared if len(m) > 1 else 0, m) for shared, m in groups]


@dataclass
class PrefixNode:
    """Rows that share tokens `[start:end]` past their parent's prefix (`first` is one of
    them): the model runs those tokens once, on top of the parent's cache. `rows` are
    scored from `end` on (each its remaining tokens, in one padded batch), `children`
    share more. The root has `start == end == 0`."""

    start: int
    end: int
    first: int
    rows: list[int]
    children: list[PrefixNode]


def prefix_tree(
    rows: Sequence[Sequence[int]], keep: int, shared_min: int = SHARED_MIN
) -> PrefixNode:
    """The rows as a tree of shared token prefixes (rows sorted, then `prefix_groups`
    at every level): a space's prompts share a template's instruction and shots, and a
    prompt's multi-token continuations share the whole prompt, so each shared part runs
    once. Every row keeps its last `keep` tokens out of any shared prefix."""
    order = sorted(range(len(rows)), key=lambda i: tuple(rows[i]))
    return _prefix_node(rows, order, 0, 0, keep, shared_min)


def _prefix_node(
    rows: Sequence[Sequence[int]],
    members: list[int],
    start: int,
    end: int,
    keep: int,
    shared_min: int,
) -> PrefixNode:
    node = PrefixNode(start, end, members[0], [], [])
    tails = [rows[i][end:] for i in members]
    for shared, group in prefix_groups(tails, keep, shared_min):
        picked = [members[k] for k in group]
        if shared:
            node.children.append(_prefix_node(rows, picked, end, end + shared, keep, shared_min))
        else:
            node.rows.extend(picked)
    return node
