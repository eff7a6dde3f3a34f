"""Whether one sample's answer is right, for the sample browser's correct/incorrect filter.

The gold's form says the task's answer type (see `extract.gold_answer`): a label is right
when it equals the gold; a list of strings is a QA gold, right when the answer is an
exact match after the task's own SQuAD/JSQuAD normalisation, with golds NFKC-normalised
only where the run's `qa_mode` did so for its metrics (`first-line`; `paper` leaves golds
as they are, and old runs without the field used `first-line`); a number (STS) is "right"
within `NUMBER_TOLERANCE` of the gold, a reading aid only: the task's metric is a
correlation over all instances, not a per-sample verdict.
"""

from __future__ import annotations

from typing import Any

from hakari.scoring.corpus import per_item_scores

NUMBER_TOLERANCE = 0.5


def is_correct(
    answer: Any, gold: Any, *, language: str = "en", qa_mode: str = "first-line"
) -> bool | None:
    """The verdict on one sample (None when there is no gold); `language` is the task's."""
    if gold is None or answer is None:
        return None if gold is None else False
    if isinstance(gold, list):
        lang = "ja" if language == "ja" else "en"
        try:
            scores = per_item_scores(
                "exact_match",
                [str(answer)],
                [[str(g) for g in gold]],
                lang=lang,
                nfkc=qa_mode != "paper",
            )
        except (ValueError, TypeError):
            return None
        return bool(scores is not None and scores[0] == 1.0)
    if isinstance(gold, bool) or not isinstance(gold, int | float):
        return str(answer) == str(gold)
    try:
        return abs(float(answer) - float(gold)) <= NUMBER_TOLERANCE
    except (TypeError, ValueError):
        return False
