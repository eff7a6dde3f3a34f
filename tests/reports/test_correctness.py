"""The HTML sample browser's correct/incorrect verdict follows the run's QA mode."""

from __future__ import annotations

from hakari.reports.correctness import is_correct


def test_full_width_gold_matches_only_where_golds_were_normalised() -> None:
    answer, gold = "ABC", ["ＡＢＣ"]  # outputs are NFKC-normalised, this gold is full-width
    assert is_correct(answer, gold) is True  # default: first-line
    assert is_correct(answer, gold, qa_mode="first-line") is True
    assert is_correct(answer, gold, qa_mode="paper") is False


def test_labels_and_numbers_ignore_the_qa_mode() -> None:
    assert is_correct("B", "B", qa_mode="paper") is True
    assert is_correct("2.4", 2.0, qa_mode="paper") is True
    assert is_correct("3.0", 2.0) is False
