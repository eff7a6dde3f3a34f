"""Corpus-level metrics, checked against values worked by hand and against scipy/sklearn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import matthews_corrcoef

from hakari.scoring import corpus
from hakari.scoring.corpus import compute, compute_detailed, normalize_answer, squad_em, squad_f1

# ----------------------------------------------------------------------------- accuracy


def test_accuracy_counts_none_as_wrong() -> None:
    preds = ["a", None, "b", "b"]
    refs = ["a", "a", "b", "a"]
    assert compute("accuracy", preds, refs) == 0.5
    np.testing.assert_array_equal(corpus.per_item_scores("accuracy", preds, refs), [1, 0, 1, 0])


def test_accuracy_int_labels_and_strict_types() -> None:
    assert compute("accuracy", [0, 1, 2, 2], [0, 1, 1, 2]) == 0.75
    # "1" is not the label 1: the engine maps answers onto label values before scoring.
    assert compute("accuracy", ["1", "0"], [1, 0]) == 0.0


# ----------------------------------------------------------------------------- MCC


def test_mcc_hand_worked_confusion_matrix() -> None:
    # TP=3, TN=4, FP=1, FN=2:
    # MCC = (3*4 - 1*2) / sqrt((3+1)(3+2)(4+1)(4+2)) = 10 / sqrt(600) = 1/sqrt(6)
    refs = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    preds = [1, 1, 1, 0, 0, 0, 0, 0, 0, 1]
    assert compute("mcc", preds, refs) == pytest.approx(1 / math.sqrt(6), abs=1e-12)


def test_mcc_constant_predictions_is_zero_and_recorded() -> None:
    result = compute_detailed("mcc", ["ok", "ok", "ok"], ["ok", "bad", "ok"])
    assert result.value == 0.0
    assert result.degenerate == "constant_predictions"
    constant_refs = compute_detailed("mcc", ["ok", "bad", "ok"], ["ok", "ok", "ok"])
    assert (constant_refs.value, constant_refs.degenerate) == (0.0, "constant_references")


def test_mcc_multiclass_with_none_matches_sklearn() -> None:
    rng = np.random.default_rng(3)
    refs = list(rng.choice(["entailment", "neutral", "contradiction"], size=200))
    preds: list[str | None] = list(rng.choice(["entailment", "neutral", "contradiction"], 200))
    preds[5] = None
    preds[17] = None
    expected = matthews_corrcoef(refs, ["<none>" if p is None else p for p in preds])
    assert compute("mcc", preds, refs) == pytest.approx(expected, abs=1e-12)
    assert corpus.per_item_scores("mcc", preds, refs) is None


# ----------------------------------------------------------------------------- correlations


def test_pearson_hand_worked() -> None:
    # deviations (-1, 0, 1) and (-1, 1, 0): sum of products 1, sums of squares 2 and 2.
    assert compute("pearson", [1.0, 2.0, 3.0], [1.0, 3.0, 2.0]) == pytest.approx(0.5)


def test_spearman_with_ties_uses_average_ranks() -> None:
    # ranks x: 1, 2.5, 2.5, 4; ranks y: 1, 3, 2, 4; both have mean 2.5.
    # deviations x: -1.5, 0, 0, 1.5; y: -1.5, .5, -.5, 1.5
    # rho = 4.5 / sqrt(4.5 * 5) = sqrt(0.9)
    value = compute("spearman", [1.0, 2.0, 2.0, 3.0], [1.0, 3.0, 2.0, 4.0])
    assert value == pytest.approx(math.sqrt(0.9), abs=1e-12)


def test_correlations_match_scipy_on_random_data() -> None:
    rng = np.random.default_rng(0)
    refs = rng.uniform(0, 5, size=300)
    preds = np.round(refs + rng.normal(0, 1.5, size=300))  # rounded: many ties
    assert compute("pearson", preds, refs) == pytest.approx(pearsonr(preds, refs)[0], abs=1e-12)
    assert compute("spearman", list(preds), list(refs)) == pytest.approx(
        spearmanr(preds, refs)[0], abs=1e-12
    )


@pytest.mark.parametrize("name", ["pearson", "spearman"])
def test_correlation_degenerate_cases_are_zero_not_nan(name: str) -> None:
    constant_pred = compute_detailed(name, [2.0, 2.0, 2.0], [1.0, 3.0, 4.5])
    assert (constant_pred.value, constant_pred.degenerate) == (0.0, "constant_predictions")
    constant_ref = compute_detailed(name, [1.0, 3.0, 4.5], [2.0, 2.0, 2.0])
    assert (constant_ref.value, constant_ref.degenerate) == (0.0, "constant_references")
    single = compute_detailed(name, [1.0], [3.0])
    assert (single.value, single.degenerate) == (0.0, "single_instance")
    assert compute_detailed(name, [1.0, 2.0], [1.0, 2.0]).degenerate is None


def test_correlation_rejects_none_and_nan() -> None:
    with pytest.raises(ValueError, match="None"):
        compute("pearson", [1.0, None, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="NaN"):
        compute("spearman", [1.0, float("nan"), 2.0], [1.0, 2.0, 3.0])


# ----------------------------------------------------------------------------- input errors


@pytest.mark.parametrize("name", corpus.names())
def test_empty_input_is_a_clear_error(name: str) -> None:
    with pytest.raises(ValueError, match="empty input"):
        compute(name, [], [])


def test_length_mismatch_unknown_metric_and_option() -> None:
    with pytest.raises(ValueError, match="2 predictions but 3 references"):
        compute("accuracy", [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="unknown metric"):
        compute("bleu", [1], [1])
    with pytest.raises(ValueError, match="unknown option"):
        compute("f1", ["a"], [["a"]], language="en")
    with pytest.raises(ValueError, match="lang"):
        compute("f1", ["a"], [["a"]], lang="fr")
    with pytest.raises(ValueError, match="no gold"):
        compute("exact_match", ["a"], [[]])


def test_lang_is_accepted_and_ignored_by_label_metrics() -> None:
    assert compute("accuracy", [1, 0], [1, 1], lang="ja") == 0.5


# ----------------------------------------------------------------------------- SQuAD (en)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The  Quick, brown fox!", "quick brown fox"),
        ("an apple", "apple"),
        ("A", ""),
        ("Theater of the absurd", "theater of absurd"),  # only whole-word articles go
        ("U.S.A.", "usa"),
        ("  tab\tand\nnewline ", "tab and newline"),
        ("PARIS", "paris"),
        ("rock-'n'-roll", "rocknroll"),
    ],
)
def test_squad_normalize_answer_english(text: str, expected: str) -> None:
    assert normalize_answer(text, "en") == expected


def test_squad_em_f1_english_hand_worked() -> None:
    assert squad_em("the Eiffel Tower", ["Eiffel Tower.", "Paris"]) == 1.0
    assert squad_em("PARIS", ["paris"]) == 1.0
    assert squad_em("Paris, France", ["Paris"]) == 0.0
    # [eiffel tower in paris] vs [eiffel tower]: P = 2/4, R = 2/2 -> F1 = 2/3
    assert squad_f1("Eiffel Tower in Paris", ["the Eiffel Tower"]) == pytest.approx(2 / 3)
    # best over golds: vs "France" P=1/2 R=1 -> 2/3; vs "city of Paris" P=1/2 R=1/3 -> 0.4
    assert squad_f1("Paris France", ["city of Paris", "France"]) == pytest.approx(2 / 3)
    # Counter overlap counts repeated tokens: y:2 common, P = 2/4, R = 2/3 -> F1 = 4/7
    assert squad_f1("x y y z", ["y y y"]) == pytest.approx(4 / 7)


def test_squad_empty_prediction_english() -> None:
    assert squad_em("", ["Paris"]) == 0.0
    assert squad_f1("", ["Paris"]) == 0.0
    assert squad_f1(None, ["Paris"]) == 0.0
    # evaluate-v1.1.py quirk: a gold that normalises to "" matches EM, but F1 has no
    # common token and is 0.
    assert squad_em("", ["The"]) == 1.0
    assert squad_f1("", ["The"]) == 0.0


def test_squad_corpus_scores_are_on_unit_scale() -> None:
    preds = ["Eiffel Tower in Paris", "Denver Broncos", ""]
    refs = [["the Eiffel Tower"], ["Denver Broncos", "Broncos"], ["1995"]]
    assert compute("exact_match", preds, refs) == pytest.approx(1 / 3)
    assert compute("f1", preds, refs) == pytest.approx((2 / 3 + 1 + 0) / 3)
    np.testing.assert_allclose(corpus.per_item_scores("f1", preds, refs), [2 / 3, 1, 0])


# ----------------------------------------------------------------------------- JSQuAD (ja)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("東京タワー。", "東京タワー"),
        ("東京タワー。。", "東京タワー"),  # rstrip removes every trailing 。
        ("東京タワー。 ", "東京タワー。"),  # rstrip runs before the whitespace fix
        ("「東京」、大阪", "「東京」、大阪"),  # no punctuation removal
        ("the tower", "the tower"),  # no article removal
        ("ＡＢＣ", "ａｂｃ"),  # lower() maps full-width capitals
        ("東京　タワー", "東京 タワー"),  # full-width space is whitespace for str.split
    ],
)
def test_jsquad_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text, "ja") == expected


def test_jsquad_char_f1_hand_worked() -> None:
    # 東京タワー (5 chars) vs タワー (3): common 3, P = 3/5, R = 1 -> F1 = 0.75
    assert squad_f1("東京タワー", ["タワー"], "ja") == pytest.approx(0.75)
    # trailing 。 on the gold is stripped, so this is exact
    assert squad_em("東京タワー", ["東京タワー。"], "ja") == 1.0
    # best over golds: vs 東京 P=2/4 R=1 -> 2/3; vs 都庁舎 P=2/4 R=2/3 -> 4/7
    assert squad_f1("東京都庁", ["都庁舎", "東京"], "ja") == pytest.approx(2 / 3)
    # repeated characters: common あ:1 い:1, P = 2/3, R = 1 -> 0.8
    assert squad_f1("ああい", ["あい"], "ja") == pytest.approx(0.8)
    # the space is a character: P = 5/6, R = 1 -> 10/11
    assert squad_f1("東京 タワー", ["東京タワー"], "ja") == pytest.approx(10 / 11)
    # punctuation is kept: 「東京」 vs 東京 -> EM 0, F1 = 2/3
    assert squad_em("「東京」", ["東京"], "ja") == 0.0
    assert squad_f1("「東京」", ["東京"], "ja") == pytest.approx(2 / 3)


def test_jsquad_full_width_characters_and_nfkc_option() -> None:
    # １９９５年 vs 1995年 share only 年: P = R = 1/5 -> F1 = 0.2
    assert squad_f1("１９９５年", ["1995年"], "ja") == pytest.approx(0.2)
    assert squad_em("１９９５年", ["1995年"], "ja") == 0.0
    assert squad_em("１９９５年", ["1995年"], "ja", nfkc=True) == 1.0
    assert (
        compute("f1", ["出梅(しゅつばい)"], [["出梅（しゅつばい）"]], lang="ja", nfkc=True) == 1.0
    )


def test_jsquad_empty_prediction() -> None:
    assert squad_em("", ["東京", "東京都"], "ja") == 0.0
    assert squad_f1("", ["東京", "東京都"], "ja") == 0.0
    # golds that normalise to "" are dropped; with none left the gold is "" and an empty
    # prediction agrees with it (transformers' get_raw_scores / compute_f1).
    assert squad_em("", ["。"], "ja") == 1.0
    assert squad_f1("", ["。"], "ja") == 1.0
    assert squad_f1("東京", ["。", "東京"], "ja") == 1.0


def test_jsquad_corpus_mean() -> None:
    preds = ["東京タワー", "大阪。", ""]
    refs = [["タワー"], ["大阪", "大阪府"], ["京都"]]
    assert compute("exact_match", preds, refs, lang="ja") == pytest.approx(1 / 3)
    assert compute("f1", preds, refs, lang="ja") == pytest.approx((0.75 + 1.0 + 0.0) / 3)
