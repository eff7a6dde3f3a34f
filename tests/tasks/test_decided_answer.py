"""A greedy label answer ends once its extracted answer is decided
(`hakari.tasks.extract.decided_answer_stop`, sent as the request's `stop_after`):
the answer extracted from the cut text is the one the whole line gives, on adversarial
texts for every built-in label template, on real SmolLM2 answers recorded without the
rule (tests/fixtures/smollm2_demo_greedy.jsonl), and on the real model run both ways."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import replace

import pytest

from hakari.backends.base import apply_output_rules
from hakari.backends.hf import HFBackend
from hakari.runner.requests import generation_request
from hakari.tasks.data import iter_rows
from hakari.tasks.extract import Extraction, decided_answer_stop, extract_answer
from hakari.tasks.loader import builtin_task_paths, load_task
from hakari.tasks.prompts import RenderedPrompt, iter_chunks
from hakari.tasks.spec import TaskSpec
from tests.helpers.paths import REPO

RECORDED = REPO / "tests" / "fixtures" / "smollm2_demo_greedy.jsonl"


def _label_templates() -> Iterator[tuple[TaskSpec, str, str, dict]]:
    for name in sorted(builtin_task_paths()):
        spec = load_task(name).spec
        if spec.answer_type != "label":
            continue
        for t in spec.templates:
            if "{{" not in t.regex and t.answers is not None:
                yield spec, t.id, t.regex, dict(t.answers)


LABEL_TEMPLATES = list(_label_templates())


def _extract(spec: TaskSpec, text: str, regex: str, answers: dict) -> tuple:
    e: Extraction = extract_answer(spec, text, regex, answers)
    return e.answer, e.matched, e.used_fallback


def _cut(text: str, regex: str, max_new_chars: int | None = None) -> str:
    decided = decided_answer_stop(regex)
    assert decided is not None, regex
    return apply_output_rules(text, stop=("\n",), max_new_chars=max_new_chars, stop_after=decided)[
        0
    ]


def test_decided_regex_reach() -> None:
    """max width + 2 characters past the first whole-token match; None where unbounded."""
    assert apply_output_rules("1. yes", stop_after=decided_answer_stop("[01]"))[0] == "1. "
    assert apply_output_rules("x 1", stop_after=decided_answer_stop("[01]"))[0] == "x 1"
    # "10" is not a whole-token "1": the match is the later "0"
    assert apply_output_rules("10 or 0 ok", stop_after=decided_answer_stop("[01]"))[0] == (
        "10 or 0 o"
    )
    assert (
        apply_output_rules("いいえ、です", stop_after=decided_answer_stop("(はい|いいえ)"))[0]
        == "いいえ、です"[:5]
    )
    for unbounded in ("[0-9]+", ".*", "(a|b)*", "x(?=y)", "[01](?!0)"):
        assert decided_answer_stop(unbounded) is None, unbounded


def _adversarial_texts(regex_keys: list[str], rng: random.Random, n: int) -> Iterator[str]:
    """Texts that put keys next to letters, digits, dots, minus signs and Japanese."""
    pieces = [*regex_keys, *"0123456789.-,: \nAaBbxyz", "は", "い", "え", "肯定", "。", "10", "5.5"]
    for _ in range(n):
        yield "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("spec", "template_id", "regex", "answers"),
    LABEL_TEMPLATES,
    ids=[f"{s.name}-{t}" for s, t, _, _ in LABEL_TEMPLATES],
)
def test_cut_text_extracts_what_the_whole_line_extracts(
    spec: TaskSpec, template_id: str, regex: str, answers: dict
) -> None:
    rng = random.Random(f"{spec.name}/{template_id}")
    for text in _adversarial_texts(list(answers), rng, 400):
        for budget in (None, 6, 24):
            whole = apply_output_rules(text, stop=("\n",), max_new_chars=budget)[0]
            cut = _cut(text, regex, budget)
            assert whole.startswith(cut)
            assert _extract(spec, cut, regex, answers) == _extract(spec, whole, regex, answers), (
                text,
                cut,
            )
            # however the cut line had gone on, the answer stays
            if cut != whole:
                for _ in range(5):
                    tail = next(_adversarial_texts(list(answers), rng, 1))
                    longer = apply_output_rules(cut + tail, stop=("\n",), max_new_chars=budget)[0]
                    assert _extract(spec, longer, regex, answers) == _extract(
                        spec, cut, regex, answers
                    ), (cut, tail)


def _recorded() -> list[dict]:
    return [json.loads(line) for line in RECORDED.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_recorded_real_answers_extract_the_same_when_cut() -> None:
    """SmolLM2's greedy answers on the demo suite, generated to the end of their line:
    cut by the rule, every one extracts the same answer, and most Japanese ones (the
    instruction repeated) are not cut at all: no label in them, nothing decided."""
    records = _recorded()
    assert len(records) >= 300
    cut_count = 0
    for r in records:
        spec = load_task(r["task"]).spec
        template = spec.template(r["template_id"])
        answers = dict(template.answers or {})
        cut = _cut(r["output"], template.regex, spec.max_chars_for(template))
        assert r["output"].startswith(cut)
        assert _extract(spec, cut, template.regex, answers) == _extract(
            spec, r["output"], template.regex, answers
        ), r
        cut_count += cut != r["output"]
    assert cut_count > 0


def _demo_prompts(n_rows: int) -> list[tuple[TaskSpec, RenderedPrompt]]:
    out = []
    for name in ("demo_sentiment_en", "demo_sentiment_ja"):
        task = load_task(name)
        rows = iter_rows(task.spec, limit=n_rows, task_dir=task.path.parent)
        for chunk in iter_chunks(task.spec, task.spec.templates, rows, 64):
            out.extend((task.spec, rp) for rp in chunk)
    return out


@pytest.mark.slow
def test_real_model_both_ways(smollm2_backend: HFBackend) -> None:
    """SmolLM2 on the demo prompts, with and without the rule: the same extracted answers,
    every cut answer a prefix of the whole one, and no more tokens."""
    prompts = _demo_prompts(1)  # every template of both tasks, one review each
    ruled = [generation_request(rp, "greedy", smollm2_backend.supports_chat) for _, rp in prompts]
    assert all(r.stop_after is not None for r in ruled)
    whole = [replace(r, stop_after=None) for r in ruled]
    with_rule = smollm2_backend.generate(ruled)
    without = smollm2_backend.generate(whole)
    for (spec, rp), a, b in zip(prompts, with_rule, without, strict=True):
        assert b.text.startswith(a.text) and a.n_tokens <= b.n_tokens, (rp, a, b)
        assert _extract(spec, a.text, rp.regex, rp.answers or {}) == _extract(
            spec, b.text, rp.regex, rp.answers or {}
        ), (rp.template_id, a, b)
    assert any(a.n_tokens < b.n_tokens for a, b in zip(with_rule, without, strict=True))
