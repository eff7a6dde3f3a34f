"""The reference scorer's easy-to-get-wrong rules (../shared/docs/pfgen-bench.md §2), one by one."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hakari.pfgen.helpfulness import score_helpfulness
from hakari.pfgen.ngram import answer_windows, build_table, score_answers
from hakari.pfgen.scoring import compensated_sum, mean_std, sequential_sum
from tests.helpers.pfgen_oracle import NaiveSource, new_ngrams_per_prefix

REFS = [
    "富士山の高さは3776メートルで、日本で最も高い山です。",
    "富士山は標高3776メートルの成層火山です。",
    "富士山の高さは約3776メートルです。富士山は美しい。",
    "^富士山$は高い山です。",
]


def scores(refs: list[str], answers: list[str]) -> tuple[list[float], list[float]]:
    fluency, truthfulness = score_answers(build_table({"P": refs}), answers)
    return fluency[:, 0].tolist(), truthfulness[:, 0].tolist()


def test_markers_never_inside_ngrams():
    grams = new_ngrams_per_prefix("abcab", max_n=3)
    assert grams == [[], ["a"], ["b", "ab"], ["c", "bc", "abc"], ["ca", "bca"], ["cab"]]
    assert not any("^" in g or "$" in g for gs in grams for g in gs)


def test_literal_caret_and_dollar_are_ordinary_characters():
    table = build_table({"P": ["a^b", "a^b", "xyz"]})
    assert len(table.keys[0]) == 6  # a ^ b x y z
    answers = ["a^b", "ab"]
    fluency, truth = score_answers(table, answers)
    naive = NaiveSource(["a^b", "a^b", "xyz"])
    assert fluency[:, 0].tolist() == [naive.fluency(a) for a in answers]
    assert truth[:, 0].tolist() == [naive.truthfulness(a) for a in answers]
    assert fluency[0, 0] > fluency[1, 0]  # "a^" and "^b" are real n-grams here


def test_document_frequency_counts_each_reference_once():
    table = build_table({"P": ["ああああ", "あい"]})
    one_gram = dict(zip(table.keys[0].tolist(), table.counts[0][:, 0].tolist(), strict=True))
    code_a = int(np.searchsorted(table.alphabet, ord("あ")))
    assert one_gram[code_a] == 2  # in both references, counted once in "ああああ"


def test_fluency_counts_distinct_ngrams_of_the_answer_once():
    refs = ["ああい", "いう"]
    once, twice = scores(refs, ["ああい", "ああいああい"])[0]
    naive = NaiveSource(refs)
    assert once == naive.fluency("ああい")
    assert twice == naive.fluency("ああいああい")


def test_windows_are_200_characters_for_fluency_and_201_for_truthfulness():
    long = "".join(chr(0x3042 + i % 80) for i in range(260))
    (window,) = answer_windows([long])
    assert window == "^" + long[:201]  # no "$": the 202-character window cuts it off
    table = build_table({"P": [long[:120], long[100:230]]})
    naive = NaiveSource([long[:120], long[100:230]])
    answers = [long[:199], long[:200], long[:201], long[:202], long]
    fluency, truth = score_answers(table, answers)
    assert fluency[:, 0].tolist() == [naive.fluency(a) for a in answers]
    assert truth[:, 0].tolist() == [naive.truthfulness(a) for a in answers]
    # Past 150 characters the discount is negative, so nothing beyond 200/201 can matter.
    assert fluency[2, 0] == fluency[3, 0] == fluency[4, 0]
    assert truth[3, 0] == truth[4, 0]


def test_truthfulness_skips_japanese_punctuation_but_not_ascii():
    refs = ["東京です"] * 3
    plain, jp_punct, ascii_punct = scores(refs, ["東京です", "東京です。。", "東京です.."])[1]
    assert plain == 1.0
    assert jp_punct == plain  # 。 is skipped entirely
    assert ascii_punct == pytest.approx(4 / 6)  # . counts, and matches nothing


def test_best_cut_lengths_and_length_discount():
    unit = "日本の首都は東京です。"  # 11 characters
    refs = [unit * 9, unit * 10, unit * 9 + "京都"]
    answers = [unit * 9, unit * 12, unit * 14 + "x" * 30]
    naive = NaiveSource(refs)
    fluency, truth = scores(refs, answers)
    assert fluency == [naive.fluency(a) for a in answers]
    assert truth == [naive.truthfulness(a) for a in answers]
    assert fluency[1] <= fluency[0] * (100 / 99) + 1e-12  # no reward past 100 characters


def test_empty_and_unknown_answers_score_zero():
    fluency, truth = scores(REFS, ["", "。。。", "zzzz"])
    assert fluency[0] == fluency[2] == 0.0
    assert truth == [0.0, 0.0, 0.0]  # "。" is known but skipped: nothing left to count


def test_no_leave_one_out_mean_reference_fluency_is_one():
    table = build_table({"P": REFS})
    fluency, _ = score_answers(table, REFS)
    assert sequential_sum(fluency[:, 0].tolist()) / len(REFS) == pytest.approx(1.0, abs=1e-15)


def test_matches_naive_rules_on_random_text():
    rng = random.Random(7)
    alphabet = "日本の首都は東京ですが、。「」（）abc^$ 　\n"
    refs = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 140))) for _ in range(40)]
    answers = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 260))) for _ in range(80)]
    answers += [*refs[:5], "", "^", "$", "^$"]
    table = build_table({"P": refs, "Q": refs[:20]})
    fluency, truth = score_answers(table, answers)
    for k, source in enumerate(("P", "Q")):
        naive = NaiveSource(refs if source == "P" else refs[:20])
        assert table.baselines[k] == naive.baseline
        assert fluency[:, k].tolist() == [naive.fluency(a) for a in answers]
        assert truth[:, k].tolist() == [naive.truthfulness(a) for a in answers]


RULES = [{"t": "東京"}, {"t": "首都", "importance": 0.5}]


def test_helpfulness_all_rules_met_within_100_characters():
    assert score_helpfulness("日本の首都は東京です。", RULES) == (1.0, [])


def test_helpfulness_missing_required_keyword_is_zero():
    value, failed = score_helpfulness("日本の首都は京都です。", RULES)
    assert value == 0.0
    assert ("東京", 0.0) in [tuple(f) for f in failed]


def test_helpfulness_half_importance_halves():
    assert score_helpfulness("東京です。", RULES)[0] == 0.5


def test_helpfulness_late_keyword_is_discounted_and_ties_go_to_longest_cut():
    answer = "あ" * 110 + "東京首都"  # 東京 complete at 112, 首都 at 114
    value, failed = score_helpfulness(answer, RULES)
    assert value == pytest.approx(1 - 14 / 50)  # cut at 114 beats cut at 112 (×0.5)
    assert failed == [("14字超過", 1 - 14 / 50)]
    # everything after 150 characters is worthless, even when all 0s tie: longest cut wins
    value, failed = score_helpfulness("あ" * 160 + "東京", RULES)
    assert value == 0.0
    assert {f[0] for f in failed} == {"東京", "首都"}


def test_helpfulness_reads_only_first_200_characters_and_leftmost_match_end():
    far = "あ" * 199 + "東京"
    assert score_helpfulness(far, [{"t": "東京"}])[0] == 0.0
    and_rule = [{"and": [{"t": "東"}, {"t": "京"}]}]
    or_rule = [{"or": [{"t": "東"}, {"t": "京"}]}]
    text = "京" + "あ" * 120 + "東"
    assert score_helpfulness(text, and_rule)[0] == pytest.approx(1 - 22 / 50)
    assert score_helpfulness(text, or_rule)[0] == 1.0


def test_rounding_is_half_even_and_sums_follow_the_python_version():
    assert mean_std([0.125, 0.125], ndigits=2) == (0.12, 0.0)
    assert mean_std([0.375], ndigits=2) == (0.38, 0.0)
    values = [1e16, 1.0, -1e16]
    assert sequential_sum(values) == 0.0  # Python 3.11 sum()
    assert compensated_sum(values) == 1.0  # Python 3.12 sum()
