"""Extraction and generation fidelity (issue 7 §1): anchored labels on every built-in
template, STS numbers, QA modes, the request's output rules, and the same rules on the
real packaged models (leading newline, Japanese byte tokens)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hakari.backends.base import (
    GenerationRequest,
    apply_output_rules,
    stop_index,
    tokens_for_chars,
)
from hakari.backends.fake import FakeBackend
from hakari.backends.hf import HFBackend
from hakari.runner import evaluate
from hakari.tasks.extract import extract_answer, find_answer, first_number
from hakari.tasks.loader import builtin_task_paths, load_task
from hakari.tasks.spec import TaskSpec

BUILTIN = sorted(builtin_task_paths())
ASCII_ALNUM = re.compile(r"[A-Za-z0-9]")


# -- the request's output rules (every backend) ------------------------------------------


@pytest.mark.parametrize(
    ("text", "stop", "chars", "expected", "reason"),
    [
        ("\n\n1. Tokyo\nmore", ("\n",), None, "\n\n1. Tokyo", "stop"),
        ("  \n", ("\n",), None, "  \n", None),  # only whitespace: never stops
        ("Paris\n", ("\n",), None, "Paris", "stop"),
        ("Q: x\nA: y", ("A:", "\n"), None, "Q: x", "stop"),
        ("\n abcdef", (), 3, "\n abc", "length"),  # leading whitespace not counted
        ("ab\ncd", ("\n",), 2, "ab", "stop"),
        ("abc", (), 5, "abc", None),
    ],
)
def test_output_rules(
    text: str, stop: tuple[str, ...], chars: int | None, expected: str, reason: str | None
) -> None:
    assert apply_output_rules(text, stop=stop, max_new_chars=chars) == (expected, reason)


def test_stop_index_ignores_leading_whitespace_only() -> None:
    assert stop_index("\n\nx\n", ("\n",)) == 3
    assert stop_index("x\n", ("\n",)) == 1
    assert stop_index("\n\n", ("\n",)) is None


def test_new_semantics_change_the_cache_key() -> None:
    settings = GenerationRequest(prompt="p", max_new_tokens=5).settings()
    assert settings["semantics"] == 2 and settings["max_new_chars"] is None


# -- anchored labels on every built-in template -------------------------------------------


def _label_templates() -> list[tuple[str, str]]:
    return [
        (name, t.id)
        for name in BUILTIN
        for t in load_task(name).spec.templates
        if load_task(name).spec.answer_type == "label"
    ]


@pytest.mark.parametrize(("task", "template_id"), _label_templates())
def test_label_matches_only_as_a_whole_token(task: str, template_id: str) -> None:
    spec = load_task(task).spec
    template = spec.template(template_id)
    assert template.answers is not None
    keys = [k for k in template.answers if "{{" not in k]
    for key in keys:
        label = template.answers[key]
        if ASCII_ALNUM.match(key[0]):  # a word or number around it hides it
            for inside in (f"Zq{key}", f"{key}zq", f"9{key}", f"{key}9", f"-{key}"):
                if inside.startswith("-") and not key[0].isdigit():
                    continue
                assert find_answer(inside, template.regex) is None, (inside, template.regex)
            out = extract_answer(spec, f"Zq{key}9 then: {key}.", template.regex, template.answers)
        else:  # Japanese: no word boundaries
            out = extract_answer(spec, f"答え：{key}です", template.regex, template.answers)
        assert (out.answer, out.matched, out.used_fallback) == (label, key, False)


@pytest.mark.parametrize(
    ("output", "regex", "expected"),
    [
        ("Based on the text, the answer is A", "[A-B]", "A"),
        ("All of them fit. C", "[A-C]", "C"),
        ("Both", "[A-B]", None),
        ("10", "[0-1]", None),
        ("0.15", "[0-2]", None),
        ("(B) acceptable", "[A-B]", "B"),
        ("答え：B", "[A-B]", "B"),
        ("positively so", "(positive|negative)", None),
        ("negative.", "(positive|negative)", "negative"),
        ("いいえ、違います", "(はい|いいえ)", "いいえ"),
    ],
)
def test_anchoring_examples(output: str, regex: str, expected: str | None) -> None:
    assert find_answer(output, regex) == expected


# -- STS: the first number, then the task's rule ----------------------------------------

STS_REGEX = load_task("jsts").spec.templates[0].regex


@pytest.mark.parametrize(
    ("output", "number", "answer", "fallback"),
    [
        ("3.8", "3.8", 3.8, False),
        ("The score is 3.", "3", 3.0, False),
        ("5", "5", 5.0, False),
        ("5.0 (identical)", "5.0", 5.0, False),
        ("10", "10", 2.0, True),  # off the 0-5 scale: fallback, not 1
        ("5.5", "5.5", 2.0, True),  # not 5
        ("-3", "-3", 2.0, True),  # not 3
        ("4.567", "4.567", 2.0, True),  # the regex allows two decimals
        ("similar", None, 2.0, True),
        ("類似度は2.5です", "2.5", 2.5, False),
    ],
)
def test_sts_reads_the_first_number(
    output: str, number: str | None, answer: float, fallback: bool
) -> None:
    spec = load_task("jsts").spec
    assert first_number(output) == number
    out = extract_answer(spec, output, STS_REGEX, None)
    assert (out.answer, out.used_fallback) == (answer, fallback)


# -- QA modes ----------------------------------------------------------------------------


def _qa_task(tmp_path: Path) -> Path:
    spec = {
        "name": "qa_tiny",
        "language": "ja",
        "data": {
            "instances": [
                {"q": "どこ", "answers": ["ＡＢＣ社"]},
                {"q": "いつ", "answers": ["5月"]},
            ]
        },
        "target": "answers",
        "answer_type": "text",
        "fallback": {"kind": "text"},
        "metrics": ["exact_match"],
        "max_new_chars": 50,
        "templates": [{"id": "0-0", "prompt": "{q}？答え：", "regex": "[^\\n]{1,200}\\n?"}],
    }
    path = tmp_path / "qa_tiny.yaml"
    path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    TaskSpec.model_validate(spec)
    return path


def test_qa_modes_differ_in_gold_normalisation_and_are_recorded(tmp_path: Path) -> None:
    outputs = {"どこ？答え：": "\n「ＡＢＣ社」", "いつ？答え：": "5月。"}
    task = _qa_task(tmp_path)
    scores = {}
    for mode in ("first-line", "paper"):
        backend = FakeBackend(lambda req: outputs[req.prompt])
        res = evaluate(
            tasks=[str(task)],
            decodings=["greedy"],
            n_boot=0,
            use_cache=False,
            qa_mode=mode,  # type: ignore[arg-type]
            output_dir=tmp_path / mode,
            backend_factory=lambda spec, b=backend: b,
        )
        assert res.config.qa_mode == mode
        dec = res.models["smollm2-135m"].tasks["qa_tiny"].decodings["greedy"]
        scores[mode] = dec.templates["0-0"].metrics["exact_match"]
        saved = json.loads((tmp_path / mode / "results.json").read_text(encoding="utf-8"))
        assert saved["config"]["qa_mode"] == mode
        assert saved["config"]["generation_budgets"]["qa_tiny"]["max_new_chars"] == 50
        assert saved["config"]["generation_budgets"]["qa_tiny"]["max_new_tokens"] == 200
    # NFKC turns the answer's full-width letters into ASCII ones: the gold ＡＢＣ社 then
    # matches only when it is normalised too.
    assert scores == {"first-line": 1.0, "paper": 0.5}


def test_paper_mode_uses_the_whole_output() -> None:
    spec = load_task("squad").spec
    regex = spec.templates[0].regex
    long = "word " * 50
    assert extract_answer(spec, long, regex, None, qa_mode="paper").answer == long.strip()
    first_line = extract_answer(spec, long, regex, None).answer
    assert len(first_line) < 200 and first_line.endswith("word")  # cut between words
    two_lines = '"Denver"\nBroncos'
    assert extract_answer(spec, two_lines, regex, None, qa_mode="paper").answer == (
        'Denver"\nBroncos'
    )
    assert extract_answer(spec, two_lines, regex, None).answer == "Denver"


def test_budgets_are_characters_for_every_builtin_task() -> None:
    for name in BUILTIN:
        spec = load_task(name).spec
        if spec.data.jaster is not None:
            # llm-jp-eval's protocol: `output_length` is a token budget of the model's
            # own tokenizer, kept as it is (max_new_tokens, no character budget)
            assert spec.max_new_chars is None and spec.max_new_tokens is not None, name
            continue
        for t in spec.templates:
            chars = spec.max_chars_for(t)
            assert chars is not None and chars >= 24, name
            assert spec.max_tokens_for(t) == tokens_for_chars(chars)


# -- the rules on the real packaged models -----------------------------------------------

JSQUAD_LIKE = (
    "文章：梅雨は、北海道と小笠原諸島を除く日本、朝鮮半島南部、中国の南部から長江流域に"
    "かけての沿海部、および台湾など、東アジアの広範囲においてみられる特有の気象現象で、"
    "5月から7月にかけて来る曇りや雨の多い期間のこと。\n"
    "質問：梅雨が見られない日本の地域はどこですか。\n"
    "文章から短い語句を抜き出し、一行で答えてください。\n答え："
)


@pytest.mark.slow
def test_gemma_leading_newline_does_not_empty_the_answer(gemma_backend: HFBackend) -> None:
    free, stopped = gemma_backend.generate(
        [
            GenerationRequest(prompt=JSQUAD_LIKE, max_new_tokens=8, stop=()),
            GenerationRequest(prompt=JSQUAD_LIKE, max_new_tokens=8, stop=("\n",)),
        ]
    )
    assert free.text[:1].isspace()  # the model opens with a newline
    assert stopped.text.strip(), stopped
    assert stopped.text == free.text[: len(stopped.text)]
    assert "\n" not in stopped.text.strip()


@pytest.mark.slow
def test_smollm2_japanese_is_never_cut_inside_a_character(smollm2_backend: HFBackend) -> None:
    prompt = "日本で一番高い山は何ですか。日本語で答えてください。"
    requests = [
        GenerationRequest(prompt=prompt, max_new_tokens=n, stop=()) for n in (2, 3, 4, 5)
    ] + [GenerationRequest(prompt=prompt, max_new_tokens=tokens_for_chars(6), max_new_chars=6)]
    results = smollm2_backend.generate(requests)
    for result in results:
        assert "\ufffd" not in result.text, result
    japanese = [r.text for r in results[:4] if re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", r.text)]
    assert japanese, "the model should answer in Japanese (byte tokens)"
    budgeted = results[-1]
    assert len(budgeted.text.lstrip()) <= 6
    if budgeted.finish_reason == "length":
        assert len(budgeted.text.lstrip()) == 6
    # Constrained: 2 tokens cannot spell 肯 (3 bytes, byte tokens); the partial character
    # is held back, so the text is a clean prefix of an option.
    cut = smollm2_backend.generate(
        [GenerationRequest(prompt=prompt, max_new_tokens=2, regex="(肯定的|否定的)")]
    )[0]
    assert "\ufffd" not in cut.text and cut.finish_reason == "length"
    assert "肯定的".startswith(cut.text) or "否定的".startswith(cut.text)
