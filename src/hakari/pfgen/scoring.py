"""Scoring trials files: per-answer scores and the reference's `result.json` numbers.

Everything that the reference computes with Python's built-in `sum` is summed here with
`sequential_sum`, a plain left-to-right float accumulation: Python 3.12 made `sum()` of
floats compensated, which moves some per-question values by 1e-5, so hakari pins the
3.11 behaviour instead of inheriting whatever the interpreter does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hakari.pfgen.data import Question
from hakari.pfgen.helpfulness import score_helpfulness
from hakari.pfgen.ngram import score_answers
from hakari.pfgen.tables import TableSet
from hakari.pfgen.trials import TrialsFile, check_complete, check_questions

CHUNK = 2048  # answers scored per vectorised batch (bounds memory)
SAMPLE_RATIOS = (0.0, 0.25, 0.5, 0.75, 1.0)


FloatSum = Callable[[Iterable[float]], float]
PYTHON_SUMS = ("3.11", "3.12")


def sequential_sum(values: Iterable[float]) -> float:
    """Python <= 3.11 `sum()` of floats: plain left-to-right accumulation."""
    total = 0.0
    for v in values:
        total += v
    return total


def compensated_sum(values: Iterable[float]) -> float:
    """Python >= 3.12 `sum()` of floats: Neumaier's compensated summation, as CPython
    does it (the compensation is added once at the end when it is finite and non-zero)."""
    total, compensation = 0.0, 0.0
    for x in values:
        t = total + x
        if abs(total) >= abs(x):
            compensation += (total - t) + x
        else:
            compensation += (x - t) + total
        total = t
    if compensation and math.isfinite(compensation):
        total += compensation
    return total


def float_sum_for(python: str) -> FloatSum:
    """The `sum()` of the Python version a published result was computed with."""
    if python == "3.11":
        return sequential_sum
    if python == "3.12":
        return compensated_sum
    raise ValueError(f"python sum mode must be one of {PYTHON_SUMS}, got {python!r}")


def mean_std(
    values: Sequence[float], ndigits: int = 4, float_sum: FloatSum = sequential_sum
) -> tuple[float, float]:
    """Mean and population std, rounded (half-even) as the reference reports them."""
    mean = float_sum(values) / len(values)
    std = math.sqrt(float_sum((x - mean) ** 2 for x in values) / len(values))
    return round(mean, ndigits), round(std, ndigits)


def answer_scores(
    fluency: Sequence[float],
    truthfulness: Sequence[float],
    question: Question,
    answer: str,
    float_sum: FloatSum = sequential_sum,
) -> dict[str, Any]:
    """The reference's per-answer `scores` dict from the raw per-source values."""
    k = len(question.sources)
    helpfulness, failed = score_helpfulness(answer, question.keywords)
    scores: dict[str, Any] = {
        "fluency": {s: round(f / k, 6) for s, f in zip(question.sources, fluency, strict=True)},
        "fluency_discount": 1.0,  # the reference's value is always 1.0
        "truthfulness": {
            s: round(t / k, 6) for s, t in zip(question.sources, truthfulness, strict=True)
        },
        "helpfulness": round(helpfulness, 5),
        "helpfulness_results": [list(r) for r in failed],
    }
    scores["average"] = round(
        (
            float_sum(scores["fluency"].values())
            + float_sum(scores["truthfulness"].values())
            + scores["helpfulness"]
        )
        / 3,
        5,
    )
    return scores


@dataclass
class ScoredFile:
    trials: TrialsFile
    # question_id -> the file's rows for that question in file order, each with "scores"
    by_question: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def score_files(
    files: list[TrialsFile],
    tables: TableSet,
    *,
    on_question: Callable[[int, int], None] | None = None,
    float_sum: FloatSum = sequential_sum,
    allow_partial: bool = False,
) -> list[ScoredFile]:
    """Score every answer of every file. Work goes question by question, so one table
    is in memory at a time and each distinct answer text is scored once. A file that
    answers only some of the questions is refused unless `allow_partial`."""
    questions = tables.by_text()
    for trials in files:
        check_questions(trials, set(questions))
        check_complete(trials, questions, allow_partial)
    scored = [ScoredFile(t) for t in files]
    grouped = [_group_by_question(t) for t in files]
    order = [q for q in tables.questions if any(q.question in g for g in grouped)]
    for done, question in enumerate(order):
        if on_question is not None:
            on_question(done, len(order))
        per_file = [g.get(question.question, []) for g in grouped]
        texts = list(dict.fromkeys(r["answer"] for rows in per_file for r in rows))
        by_text = _score_texts(tables, question, texts, float_sum)
        for result, rows in zip(scored, per_file, strict=True):
            if rows:
                result.by_question[question.question_id] = [
                    {**row, "scores": by_text[row["answer"]]} for row in rows
                ]
    if on_question is not None:
        on_question(len(order), len(order))
    return scored


def _group_by_question(trials: TrialsFile) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in trials.rows:
        groups.setdefault(row["question"], []).append(row)
    return groups


def _score_texts(
    tables: TableSet, question: Question, texts: list[str], float_sum: FloatSum
) -> dict[str, dict]:
    table = tables.load(question)
    out: dict[str, dict] = {}
    for start in range(0, len(texts), CHUNK):
        chunk = texts[start : start + CHUNK]
        fluency, truthfulness = score_answers(table, chunk)
        for text, f, t in zip(chunk, fluency.tolist(), truthfulness.tolist(), strict=True):
            out[text] = answer_scores(f, t, question, text, float_sum)
    return out


def reference_result(
    scored: ScoredFile, metadata_hash: str, float_sum: FloatSum = sequential_sum
) -> dict[str, Any]:
    """The reference scorer's `result.json` for one file, field for field."""
    data = dict(sorted(scored.by_question.items()))
    result: dict[str, Any] = {
        "input_hash": scored.trials.input_hash,
        "metadata_hash": metadata_hash,
    }
    if scored.trials.config is not None:
        result["config"] = scored.trials.config
    result["num_trials"] = min(len(rows) for rows in data.values())
    averages = [[r["scores"]["average"] for r in rows] for rows in data.values()]
    pseudo_trials = [float_sum(x) / len(x) for x in zip(*averages, strict=False)]
    result["score"], result["score_std"] = mean_std(pseudo_trials, 4, float_sum)
    lengths = [float(len(r["answer"])) for rows in data.values() for r in rows]
    result["length"], result["length_std"] = mean_std(lengths, 1, float_sum)

    totals: dict[str, Any] = {"fluency": {}, "truthfulness": {}}
    questions = {}
    for question_id, rows in data.items():
        ranked = sorted(rows, key=lambda r: r["scores"]["average"], reverse=True)
        partial = _question_means(ranked, float_sum)
        for metric in ("fluency", "truthfulness"):
            for source, value in partial[metric].items():
                previous = totals[metric].get(source, 0.0)
                totals[metric][source] = round(previous + value / len(data), 5)
        for metric in ("helpfulness", "average"):
            totals[metric] = round(totals.get(metric, 0.0) + partial[metric] / len(data), 5)
        block: dict[str, Any] = {"question": ranked[0]["question"]}
        averages_q = [r["scores"]["average"] for r in ranked]
        block["score"], block["score_std"] = mean_std(averages_q, 4, float_sum)
        lengths_q = [float(len(r["answer"])) for r in ranked]
        block["length"], block["length_std"] = mean_std(lengths_q, 1, float_sum)
        block["scores"] = partial
        block["samples"] = _samples(ranked)
        questions[question_id] = block
    result["scores"] = totals
    result["questions"] = questions
    return result


def _question_means(ranked: list[dict[str, Any]], float_sum: FloatSum) -> dict[str, Any]:
    """Per-question means (5 decimals), summed in descending-average order as upstream."""
    n = len(ranked)
    partial: dict[str, Any] = {"fluency": {}, "truthfulness": {}}
    for metric in ("fluency", "truthfulness"):
        for source in ranked[0]["scores"][metric]:
            values = (r["scores"][metric][source] for r in ranked)
            partial[metric][source] = round(float_sum(values) / n, 5)
    for metric in ("helpfulness", "average"):
        partial[metric] = round(float_sum(r["scores"][metric] for r in ranked) / n, 5)
    return partial


def _samples(ranked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    samples, seen = [], set()
    for ratio in SAMPLE_RATIOS:
        index = round(ratio * (len(ranked) - 1))
        if index in seen:
            continue
        seen.add(index)
        sample = dict(ranked[index])
        del sample["question"]
        samples.append(sample)
    return samples


def leaderboard_totals(scores_block: dict[str, Any]) -> tuple[float, float, float]:
    """The leaderboard's Fluency, Truthfulness and Helpfulness: sums over sources (5 d.p.)."""
    return (
        round(sequential_sum(scores_block["fluency"].values()), 5),
        round(sequential_sum(scores_block["truthfulness"].values()), 5),
        scores_block["helpfulness"],
    )


def model_label(path: Path) -> str:
    """`org/model/cfg` for an upstream result folder, else the file name."""
    parts = path.resolve().parts
    if "result" in parts:
        i = len(parts) - 1 - parts[::-1].index("result")
        return "/".join(parts[i + 1 : -1]) or path.name
    return path.name
