"""Building a reference answer set from generated answers: the paper's §3.2 pipeline.

Per question, in order:
1. NG filter: drop answers that match any of the question's NG regexes (known wrong facts).
2. Rare 5-gram filter: drop answers containing a character 5-gram that occurs only once
   among all the question's remaining answers (rare hallucinations and typos).
3. Length: keep the `pool` answers whose length is closest to `target_length`
   (ties keep input order).
4. Representative down-selection to `k`: the paper does not say how. hakari scores every
   pooled answer's fluency against the pool itself (the scorer's own notion of how typical
   an answer is), sorts by it, cuts the ranking into `k` equal strata and takes each
   stratum's median member, so the selection keeps the pool's spread of typicality
   instead of only its most typical answers. Deterministic.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hakari._util import checks
from hakari._util.atomic import write_bytes_atomic, write_json_atomic
from hakari._util.infiles import read_input, read_input_text
from hakari._util.regex import compile_regex, regex_problem
from hakari.errors import HakariInputError
from hakari.pfgen.data import question_files
from hakari.pfgen.ngram import build_table, score_answers

RARE_NGRAM = 5


@dataclass
class StepCounts:
    question: str
    input: int = 0
    after_ng: int = 0
    after_rare_ngrams: int = 0
    after_length: int = 0
    selected: int = 0


@dataclass
class ReferenceSet:
    answers: dict[str, list[str]] = field(default_factory=dict)  # question -> selected
    counts: list[StepCounts] = field(default_factory=list)


def load_ng_rules(path: Path) -> dict[str, list[str]]:
    """`{"<question text>": ["regex", ...], "*": [regexes for every question]}`."""
    try:
        raw = json.loads(read_input_text(path))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HakariInputError(f"cannot read NG rules: {exc}", file=str(path)) from exc
    if not isinstance(raw, dict) or not all(
        isinstance(v, list) and all(isinstance(p, str) for p in v) for v in raw.values()
    ):
        raise HakariInputError('expected {"question": ["regex", ...]}', file=str(path))
    for question, patterns in raw.items():
        for pattern in patterns:
            if (problem := regex_problem(pattern)) is not None:
                raise HakariInputError(
                    f"bad regex {pattern!r}: {problem}", file=str(path), field=question
                )
    return raw


def drop_ng(answers: list[str], patterns: list[str]) -> list[str]:
    compiled = [compile_regex(p) for p in patterns]
    return [a for a in answers if not any(c.search(a) for c in compiled)]


def char_ngrams(text: str, n: int) -> list[str]:
    return [text[i : i + n] for i in range(len(text) - n + 1)]


def drop_rare_ngrams(answers: list[str], n: int = RARE_NGRAM) -> list[str]:
    """Remove answers containing an n-gram that occurs exactly once across all answers."""
    occurrences = Counter(g for a in answers for g in char_ngrams(a, n))
    return [a for a in answers if all(occurrences[g] > 1 for g in char_ngrams(a, n))]


def closest_to_length(answers: list[str], target: int, pool: int) -> list[str]:
    order = sorted(range(len(answers)), key=lambda i: abs(len(answers[i]) - target))
    return [answers[i] for i in sorted(order[:pool])]


def representative(answers: list[str], k: int) -> list[str]:
    """k answers, one per stratum of the pool's self-fluency ranking (see module doc)."""
    if len(answers) <= k:
        return list(answers)
    table = build_table({"pool": answers})
    fluency, _ = score_answers(table, answers)
    ranking = np.argsort(-fluency[:, 0], kind="stable")
    edges = np.linspace(0, len(answers), k + 1)
    picks = [ranking[int((lo + hi) // 2)] for lo, hi in itertools.pairwise(edges)]
    return [answers[i] for i in sorted(set(int(p) for p in picks))]


def check_build_options(*, target_length: int, pool: int, k: int) -> None:
    """`--k` answers per question are chosen from a pool of `--pool` (so at least as many)
    kept closest to `--target-length` characters."""
    checks.integer(k, "--k", low=1)
    checks.integer(pool, "--pool", low=1)
    checks.integer(target_length, "--target-length", low=1)
    if pool < k:
        raise HakariInputError(
            f"--pool {pool} is smaller than --k {k}: the {k} reference answers are chosen "
            "from the pool",
            field="--pool",
        )


def build_reference_set(
    answers_by_question: dict[str, list[str]],
    *,
    ng_rules: dict[str, list[str]] | None = None,
    target_length: int = 100,
    pool: int = 30_000,
    k: int = 1000,
) -> ReferenceSet:
    check_build_options(target_length=target_length, pool=pool, k=k)
    rules = ng_rules or {}
    result = ReferenceSet()
    for question, answers in answers_by_question.items():
        counts = StepCounts(question, input=len(answers))
        kept = drop_ng(answers, rules.get("*", []) + rules.get(question, []))
        counts.after_ng = len(kept)
        kept = drop_rare_ngrams(kept)
        counts.after_rare_ngrams = len(kept)
        kept = closest_to_length(kept, target_length, pool)
        counts.after_length = len(kept)
        kept = representative(kept, k) if kept else []
        counts.selected = len(kept)
        result.answers[question] = kept
        result.counts.append(counts)
    return result


def write_data_dir(
    source_dir: Path, output_dir: Path, reference: ReferenceSet, source: str, replace: bool
) -> list[Path]:
    """Copy the question files with `answers[source]` set to the new references (and the
    other sources dropped when `replace`). Questions with no selected answer are an error."""
    output_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in question_files(source_dir):
        data: dict[str, Any] = json.loads(read_input_text(path))
        selected = reference.answers.get(data["question"])
        if selected is None and replace:
            raise HakariInputError(
                "no generated answers for this question", file=str(path), field="question"
            )
        if selected is not None:
            if not selected:
                raise HakariInputError(
                    "every answer was filtered out; loosen the filters or generate more",
                    file=str(path),
                    field="answers",
                )
            answers = {} if replace else dict(data["answers"])
            answers[source] = selected
            data["answers"] = answers
        out = output_dir / path.name
        write_json_atomic(out, data, trailing_newline=True)
        written.append(out)
    examples = source_dir / "questions.jsonl"
    if examples.is_file():
        write_bytes_atomic(output_dir / "questions.jsonl", read_input(examples))
    return written
