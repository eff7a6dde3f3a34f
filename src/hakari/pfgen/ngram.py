"""Fluency and Truthfulness against a question's reference answers, exactly as the
reference scorer computes them, but vectorised.

The reference scorer keeps, per reference source, a dict from every substring of 1..10
characters to its document frequency (the number of reference answers that contain it).
Substrings of texts are closed under dropping their first character, so the same set is a
trie read right to left: the n-gram `c + t` is stored under the key
`id(t) * alphabet_size + code(c)` in level n, where `id(t)` is t's row in level n-1. Every
level is a sorted int64 key array with a `[rows, sources]` count matrix; looking up all
the n-grams of a batch of answers is then ten `searchsorted` calls, with no Python loop
over characters and no hashing, so it is exact.

The per-answer arithmetic follows the reference operation by operation (same float
operations in the same order, sequential running sums) so that the results are bitwise
identical; see docs/pfgen.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

MAX_N = 10  # fluency n-gram order
TRUTH_N = 3  # truthfulness n-gram order
WINDOW = 202  # ("^" + answer + "$")[:202]
SKIPPED_IN_TRUTHFULNESS = "^$、。・「」『』（）【】［］〈〉《》"
BOS, EOS = "^", "$"

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass
class NgramTable:
    """The document frequencies of one question's reference sources."""

    sources: tuple[str, ...]
    source_sizes: IntArray  # number of reference answers per source
    alphabet: IntArray  # sorted code points seen in the references
    keys: list[IntArray]  # level n-1 holds the sorted keys of n-grams of length n
    counts: list[npt.NDArray[np.unsignedinteger]]  # level n-1: [len(keys), len(sources)]
    baselines: FloatArray  # raw mean fluency of each source's own references

    @property
    def num_ngrams(self) -> int:
        return sum(len(k) for k in self.keys)


def _lookup(sorted_keys: IntArray, queries: IntArray) -> IntArray:
    """Row of each query in `sorted_keys`, or -1 where it is absent."""
    if len(sorted_keys) == 0:
        return np.full(queries.shape, -1, dtype=np.int64)
    idx = np.searchsorted(sorted_keys, queries)
    idx = np.minimum(idx, len(sorted_keys) - 1)
    return np.where(sorted_keys[idx] == queries, idx, -1).astype(np.int64)


def code_points(texts: list[str], width: int) -> tuple[IntArray, IntArray]:
    """A `[len(texts), width]` array of code points (-1 beyond each text) and the lengths."""
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    out = np.full((len(texts), max(width, 1)), -1, dtype=np.int64)
    if lengths.sum() == 0:
        return out, lengths
    flat = np.frombuffer("".join(texts).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    rows = np.repeat(np.arange(len(texts)), lengths)
    starts = np.cumsum(lengths) - lengths
    cols = np.arange(len(flat)) - np.repeat(starts, lengths)
    out[rows, cols] = flat
    return out, lengths


def _encode(points: IntArray, alphabet: IntArray) -> IntArray:
    """Code point -> index in the alphabet, -1 for padding or a character never seen."""
    codes = _lookup(alphabet, points)
    codes[points < 0] = -1
    return codes


def _level_queries(prev_ids: IntArray, codes: IntArray, n: int, alphabet_size: int) -> IntArray:
    """Keys of the n-grams ending at every column (span [x-n+1, x]); -1 where impossible."""
    queries = np.full(codes.shape, -1, dtype=np.int64)
    if n == 1:
        return codes.copy()
    if n > codes.shape[1]:
        return queries
    first = codes[:, : codes.shape[1] - n + 1]  # code of the character at x-n+1
    suffix = prev_ids[:, n - 1 :]  # id of the (n-1)-gram spanning [x-n+2, x]
    ok = (first >= 0) & (suffix >= 0)
    queries[:, n - 1 :] = np.where(ok, suffix * alphabet_size + first, -1)
    return queries


def substring_ids(codes: IntArray, table: NgramTable, max_n: int = MAX_N) -> list[IntArray]:
    """For each n, a `[batch, width]` array: the table row of the n-gram ending at each
    column, or -1 where that n-gram is not in any reference."""
    size = len(table.alphabet)
    ids: list[IntArray] = []
    prev = codes
    for n in range(1, max_n + 1):
        queries = _level_queries(prev, codes, n, size)
        found = _lookup(table.keys[n - 1], queries)
        found[queries < 0] = -1
        ids.append(found)
        prev = found
    return ids


def discount(prefix_length: IntArray) -> FloatArray:
    """1 - max(n - 100, 0) / 50, in the reference's operation order."""
    return 1 - np.maximum(prefix_length - 100, 0) / 50


def _first_occurrence(ids: IntArray, mask: npt.NDArray[np.bool_]) -> tuple[IntArray, IntArray]:
    """(row, column) of the first occurrence of each distinct id within each row."""
    rows, cols = np.nonzero(mask)
    if len(rows) == 0:
        return rows, cols
    per_row = rows * (int(ids.max()) + 1) + ids[rows, cols]
    _, first = np.unique(per_row, return_index=True)
    return rows[first], cols[first]


def raw_fluency(
    ids: list[IntArray], lengths: IntArray, table: NgramTable, baselines: FloatArray
) -> FloatArray:
    """`[batch, sources]` best-cut fluency of texts `"^" + answer + "$"` cut to 202."""
    batch, width = ids[0].shape
    k = len(table.sources)
    cols = np.arange(width)
    increments = np.zeros((batch, width, k), dtype=np.int64)
    last_inside = (lengths - 2)[:, None]  # index of the last answer character counted
    for n, level in enumerate(ids, start=1):
        inside = (cols[None, :] - n + 1 >= 1) & (cols[None, :] <= last_inside) & (level >= 0)
        rows, xs = _first_occurrence(level, inside)
        if len(rows):
            increments[rows, xs] += table.counts[n - 1][level[rows, xs]].astype(np.int64)
    running = np.cumsum(increments, axis=1).astype(np.float64)
    scores = running * discount(cols)[None, :, None] / baselines[None, None, :]
    valid = (cols[None, :] >= 1) & (cols[None, :] <= last_inside)
    scores = np.where(valid[:, :, None], scores, 0.0)
    return np.maximum(scores.max(axis=1), 0.0)


def raw_truthfulness(
    ids: list[IntArray], points: IntArray, lengths: IntArray, table: NgramTable
) -> FloatArray:
    """`[batch, sources]` truthfulness of texts `"^" + answer + "$"` cut to 202."""
    level = ids[TRUTH_N - 1]
    batch, width = level.shape
    k = len(table.sources)
    cols = np.arange(width)
    present = level >= 0
    trigram_counts = np.zeros((batch, width, k), dtype=np.int64)
    trigram_counts[present] = table.counts[TRUTH_N - 1][level[present]]
    # Each character takes the best count among the 3-grams that cover it.
    coverage = trigram_counts.copy()
    for shift in range(1, TRUTH_N):
        coverage[:, :-shift] = np.maximum(coverage[:, :-shift], trigram_counts[:, shift:])
    ratio = np.minimum(1.0, coverage / table.source_sizes[None, None, :] * 200.0)
    skipped = np.isin(points, np.array([ord(c) for c in SKIPPED_IN_TRUTHFULNESS]))
    kept = (~skipped) & (cols[None, :] < lengths[:, None])
    totals = np.cumsum(np.where(kept[:, :, None], ratio, 0.0), axis=1)
    counted = np.cumsum(kept, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = totals / counted[:, :, None] * discount(cols)[None, :, None]
    best = np.where((kept & (cols[None, :] >= 100))[:, :, None], scores, 0.0).max(axis=1)
    best = np.maximum(best, 0.0)
    last_col = np.where(kept, cols[None, :], -1).max(axis=1)
    last = np.where(
        (last_col >= 0)[:, None], scores[np.arange(batch), np.maximum(last_col, 0)], 0.0
    )
    return np.maximum(best, last)


def answer_windows(answers: list[str]) -> list[str]:
    return [(BOS + a + EOS)[:WINDOW] for a in answers]


def score_answers(table: NgramTable, answers: list[str]) -> tuple[FloatArray, FloatArray]:
    """Raw (not yet divided by the number of sources, not rounded) fluency and
    truthfulness of each answer against each source: two `[len(answers), sources]`."""
    texts = answer_windows(answers)
    points, lengths = code_points(texts, max((len(t) for t in texts), default=1))
    codes = _encode(points, table.alphabet)
    ids = substring_ids(codes, table)
    fluency = raw_fluency(ids, lengths, table, table.baselines)
    truthfulness = raw_truthfulness(ids, points, lengths, table)
    return fluency, truthfulness


def build_table(references: dict[str, list[str]], max_n: int = MAX_N) -> NgramTable:
    """Document frequencies of every 1..max_n-gram of each source's reference answers,
    and each source's baseline (the mean fluency of its own references, no leave-one-out)."""
    sources = tuple(references)
    texts = [r for src in sources for r in references[src]]
    row_source = np.repeat(np.arange(len(sources)), [len(references[s]) for s in sources])
    points, _ = code_points(texts, max((len(t) for t in texts), default=1))
    alphabet = np.unique(points[points >= 0]).astype(np.int64)
    codes = _encode(points, alphabet)
    size = max(len(alphabet), 1)
    keys: list[IntArray] = []
    counts: list[npt.NDArray[np.unsignedinteger]] = []
    prev = codes
    for n in range(1, max_n + 1):
        queries = _level_queries(prev, codes, n, size)
        present = queries >= 0
        level_keys, inverse = np.unique(queries[present], return_inverse=True)
        ids = np.full(queries.shape, -1, dtype=np.int64)
        ids[present] = inverse
        rows, cols = _first_occurrence(ids, ids >= 0)
        per_source = np.bincount(
            ids[rows, cols] * len(sources) + row_source[rows],
            minlength=len(level_keys) * len(sources),
        ).reshape(len(level_keys), len(sources))
        dtype = np.uint16 if per_source.max(initial=0) < 2**16 else np.uint32
        keys.append(level_keys.astype(np.int64))
        counts.append(per_source.astype(dtype))
        prev = ids
    sizes = np.array([len(references[s]) for s in sources], dtype=np.int64)
    table = NgramTable(sources, sizes, alphabet, keys, counts, np.ones(len(sources)))
    table.baselines = _baselines(table, references)
    return table


def _baselines(table: NgramTable, references: dict[str, list[str]]) -> FloatArray:
    baselines = np.ones(len(table.sources))
    for k, source in enumerate(table.sources):
        fluency = np.concatenate(
            [
                _raw_fluency_with_unit_baseline(table, chunk)[:, k]
                for chunk in _chunks(references[source], 500)
            ]
        )
        total = 0.0
        for value in fluency.tolist():  # sequential, as the reference accumulates it
            total += value
        baselines[k] = total / len(references[source])
    return baselines


def _raw_fluency_with_unit_baseline(table: NgramTable, answers: list[str]) -> FloatArray:
    texts = answer_windows(answers)
    points, lengths = code_points(texts, max(len(t) for t in texts))
    ids = substring_ids(_encode(points, table.alphabet), table)
    return raw_fluency(ids, lengths, table, np.ones(len(table.sources)))


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
