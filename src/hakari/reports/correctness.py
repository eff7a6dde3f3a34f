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

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hakari.reports.inputs import ReportData

NUMBER_TOLERANCE = 0.5


def _language(data: ReportData, task: str) -> str:
    for model in data.models.values():
        if task in model.tasks:
            return model.tasks[task].language
    return "en"


def is_correct(
    answer: Any, gold: Any, data: ReportData, task: str, *, qa_mode: str = "first-line"
) -> bool | None:
    if gold is None or answer is None:
        return None if gold is None else False
    if isinstance(gold, list):
        from hakari.scoring.corpus import per_item_scores

        lang = "ja" if _language(data, task) == "ja" else "en"
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
