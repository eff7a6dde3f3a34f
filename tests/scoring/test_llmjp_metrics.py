"""llm-jp-eval's metrics (and Nejumi's exact_match_figure, sklearn's balanced accuracy)
on fixed outputs: Japanese punctuation, full-width digits, empty answers.

The char_f1 values below are what fuzzywuzzy 0.18.0 with python-Levenshtein 0.27.5
(llm-jp-eval v1.3.0's dependencies) returned for the same pairs; where those packages
are installed (the dev extra), `test_char_f1_equals_fuzzywuzzy` also compares on 3,000
random pairs.
"""

from __future__ import annotations

import random

import pytest

from hakari.scoring import corpus
from hakari.scoring.corpus.char_f1 import lcs_length, token_sort_ratio
from hakari.scoring.corpus.set_f1 import set_f1


def scores(name: str, predictions: list[str], golds: list[str]) -> list[float]:
    out = corpus.per_item_scores(name, predictions, [[g] for g in golds])
    assert out is not None
    return out.tolist()


def random_text(rng: random.Random, alphabet: str, longest: int) -> str:
    """A string of 0 to `longest` characters drawn from `alphabet`."""
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest)))


def test_exact_match_is_nfkc_string_equality() -> None:
    got = scores(
        "llmjp_exact_match",
        ["entailment", "entailment。", "ｅｎｔａｉｌｍｅｎｔ", "", "Entailment", "１２６"],
        ["entailment", "entailment", "entailment", "entailment", "entailment", "126"],
    )
    assert got == [1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    assert corpus.compute("llmjp_exact_match", ["a", "b"], [["a"], ["a"]]) == 0.5


@pytest.mark.parametrize(
    ("prediction", "gold", "fuzzywuzzy"),
    [
        ("東京都", "東京", 80),
        ("東京、大阪", "大阪,東京", 100),  # punctuation is a space, tokens are sorted
        ("", "東芝", 0),
        ("", "。", 100),  # both sides empty once processed: equal
        ("１２３", "123", 100),  # NFKC first
        ("ファイナルファンタジーXIII", "ファイナルファンタジーⅩⅢ", 100),
        ("YES", "yes", 100),
        ("東芝。", "東芝", 100),
        ("a" * 39 + "b", "a" * 39 + "c", 98),  # 97.5 rounds to 98
        ("a" * 193 + "b" * 7, "a" * 193 + "c" * 7, 96),  # 96.5 in floats rounds to 96
        ("織田信長,豊臣秀吉", "豊臣秀吉", 62),
        ("Éa", "a", 100),  # U+0080..U+00FF are dropped (force_ascii)
    ],
)
def test_char_f1_matches_fuzzywuzzy_values(prediction: str, gold: str, fuzzywuzzy: int) -> None:
    assert scores("char_f1", [prediction], [gold]) == [fuzzywuzzy / 100]


def test_char_f1_equals_fuzzywuzzy() -> None:
    # the dev extra installs both: the oracle must run, not skip (with Levenshtein
    # missing, fuzzywuzzy falls back on difflib, which differs)
    import Levenshtein  # noqa: F401
    from fuzzywuzzy import fuzz

    rng = random.Random(0)
    alphabet = "abcAB あいうアイ東京都、。「」１２3.-_ÉéÄ"
    for _ in range(3000):
        a, b = random_text(rng, alphabet, 15), random_text(rng, alphabet, 15)
        assert token_sort_ratio(a, b) == fuzz.token_sort_ratio(a, b), (a, b)


def test_lcs_length_against_dynamic_programming() -> None:
    def table(a: str, b: str) -> int:
        m = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i, x in enumerate(a):
            for j, y in enumerate(b):
                m[i + 1][j + 1] = m[i][j] + 1 if x == y else max(m[i][j + 1], m[i + 1][j])
        return m[-1][-1]

    rng = random.Random(1)
    for _ in range(500):
        a, b = random_text(rng, "abあい", 70), random_text(rng, "abあい", 70)
        assert lcs_length(a, b) == table(a, b)


def test_set_f1_is_llm_jp_evals_formula() -> None:
    # distinct predicted lines {a, b}: 1 found; precision 1/2, recall 1/2 (gold a, c)
    assert set_f1("a\nb\nb", "a\nc") == pytest.approx(0.5)
    assert set_f1(" a \nc", "a\nc") == 1.0
    assert set_f1("", "a") == 0.0
    # recall divides by the gold's lines, repeats counted
    assert set_f1("a", "a\na") == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert scores("set_f1", ["東京（地名）\n大阪"], ["東京(地名)\n大阪"]) == [1.0]  # NFKC


def test_exact_match_figure_reads_numbers_with_float() -> None:
    got = scores(
        "exact_match_figure",
        ["126.0", "126個", "１２６", "", "1e2", "nan", "-3"],
        ["126", "126", "126", "126", "100", "nan", "-3.0"],
    )
    assert got == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0]


def test_balanced_accuracy_is_the_mean_recall_over_gold_classes() -> None:
    predictions = ["a", "x", "b", "b", "ｃ"]
    golds = ["a", "a", "b", "c", "c"]
    # a: 1/2, b: 1/1, c: 1/2 (full-width ｃ is c after NFKC)
    assert corpus.compute("balanced_accuracy", predictions, [[g] for g in golds]) == (
        pytest.approx((0.5 + 1 + 0.5) / 3)
    )
    metrics = pytest.importorskip("sklearn.metrics")
    want = metrics.balanced_accuracy_score(["a", "a", "b", "c"], ["a", "x", "b", "b"])
    got = corpus.compute("balanced_accuracy", ["a", "x", "b", "b"], [["a"], ["a"], ["b"], ["c"]])
    assert got == pytest.approx(want)
