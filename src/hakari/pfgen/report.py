"""The summary hakari writes for one scored trials file (`hakari pfgen score --json`)."""

from __future__ import annotations

from typing import Any

from hakari.pfgen.scoring import (
    FloatSum,
    ScoredFile,
    leaderboard_totals,
    model_label,
    reference_result,
)
from hakari.pfgen.uncertainty import estimate, question_spread

PSEUDO_TRIAL_NOTE = (
    "reference parity: population std over pseudo-trials that pair the i-th answer of every "
    "question in file (byte-sorted) order; not a between-trial std, see uncertainty"
)


def summarize(
    scored: ScoredFile,
    metadata_hash: str,
    *,
    float_sum: FloatSum,
    python_sum: str,
    resamples: int = 10_000,
    seed: int = 0,
    questions_total: int | None = None,
) -> dict[str, Any]:
    """The summary of one scored file; `partial` is null when it answers every one of
    the `questions_total` questions of the data version, else how many it answers."""
    reference = reference_result(scored, metadata_hash, float_sum)
    fluency, truthfulness, helpfulness = leaderboard_totals(reference["scores"])
    uncertainty = estimate(scored.by_question, resamples=resamples, seed=seed)
    questions = {}
    for qid, block in reference["questions"].items():
        spread = question_spread([r["scores"]["average"] for r in scored.by_question[qid]])
        questions[qid] = {**block, "spread": spread.__dict__}
    config = scored.trials.config or {}
    return {
        "model": model_label(scored.trials.path),
        "file": str(scored.trials.path),
        "input_hash": reference["input_hash"],
        "metadata_hash": metadata_hash,
        "config": config,
        "num_trials": reference["num_trials"],
        "num_questions": len(reference["questions"]),
        "partial": partial_block(len(reference["questions"]), questions_total),
        "score": reference["score"],
        "score_std": reference["score_std"],
        "score_std_kind": PSEUDO_TRIAL_NOTE,
        "length": reference["length"],
        "length_std": reference["length_std"],
        "fluency": fluency,
        "truthfulness": truthfulness,
        "helpfulness": helpfulness,
        "scores": reference["scores"],
        "uncertainty": uncertainty.to_dict(),
        "python_sum": python_sum,
        "questions": questions,
    }


def partial_block(answered: int, total: int | None) -> dict[str, int] | None:
    if total is None or answered >= total:
        return None
    return {"questions_answered": answered, "questions_total": total}


def partial_label(summary: dict[str, Any]) -> str | None:
    """ "partial 1/2" for a summary over part of the question set, else None."""
    block = summary.get("partial")
    if not isinstance(block, dict):
        return None
    return f"partial {block.get('questions_answered')}/{block.get('questions_total')}"


def is_summary(obj: Any) -> bool:
    return isinstance(obj, dict) and "uncertainty" in obj and "score" in obj
