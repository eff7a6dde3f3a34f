from __future__ import annotations

import re

import pytest

from hakari.tasks.extract import extract_answer, gold_answer, normalize_qa_answer
from hakari.tasks.prompts import render, select_templates
from hakari.tasks.spec import TaskSpec

BASE = {
    "name": "t",
    "language": "en",
    "data": {"instances": [{"q": "x", "label": "b"}]},
    "target": "label",
    "metrics": ["accuracy"],
}


def label_task(**extra) -> TaskSpec:
    return TaskSpec.model_validate(
        BASE
        | {
            "answer_type": "label",
            "labels": ["a", "b", "c"],
            "fallback": {"kind": "label", "value": "c"},
            "templates": [
                {
                    "id": "0-0",
                    "prompt": "{q}",
                    "regex": "[0-2]",
                    "answers": {"0": "a", "1": "b", "2": "c"},
                }
            ],
        }
        | extra
    )


def test_label_extraction_takes_first_match_and_falls_back() -> None:
    spec = label_task()
    answers = {"0": "a", "1": "b", "2": "c"}
    pat = re.compile("[0-2]")
    assert extract_answer(spec, " 1, not 2", pat, answers).answer == "b"
    out = extract_answer(spec, "no idea", pat, answers)
    assert (out.answer, out.used_fallback, out.matched) == ("c", True, None)


def test_first_label_fallback() -> None:
    spec = label_task(fallback={"kind": "first_label"})
    assert extract_answer(spec, "?", re.compile("[0-2]"), {"0": "a"}).answer == "a"


def test_number_extraction_and_fallback_2_0() -> None:
    spec = TaskSpec.model_validate(
        BASE
        | {
            "answer_type": "number",
            "target": "label",
            "fallback": {"kind": "number", "value": 2.0},
            "metrics": ["pearson"],
            "templates": [{"id": "0-0", "prompt": "{q}", "regex": r"[0-5](\.[0-9])?"}],
        }
    )
    pat = re.compile(r"[0-5](\.[0-9])?")
    assert extract_answer(spec, "score: 3.5 out of 5", pat, None).answer == 3.5
    fb = extract_answer(spec, "high", pat, None)
    assert fb.answer == 2.0 and fb.used_fallback


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('"Denver Broncos".', "Denver Broncos"),
        ("「東京」。", "東京"),
        ("ＡＢＣ１２３", "ABC123"),  # NFKC folds full-width letters and digits
        ("  'the answer'  ", "the answer"),
        ("(1998)", "1998"),
        ("", ""),
    ],
)
def test_qa_normalisation(raw: str, expected: str) -> None:
    assert normalize_qa_answer(raw) == expected


def test_instance_refs_are_escaped_in_regex_but_not_in_answers() -> None:
    spec = TaskSpec.model_validate(
        BASE
        | {
            "data": {"instances": [{"q": "?", "c0": "a.b (x)", "c1": "c+d", "label": 1}]},
            "answer_type": "label",
            "labels": [0, 1],
            "fallback": {"kind": "first_label"},
            "templates": [
                {
                    "id": "0-2",
                    "prompt": "{q} {c0} or {c1}?",
                    "regex": "({{c0}}|{{c1}})",
                    "answers": {"{{c0}}": 0, "{{c1}}": 1},
                }
            ],
        }
    )
    row = spec.data.instances[0]  # type: ignore[index]
    rp = render(spec, spec.templates[0], row, 0)
    assert re.fullmatch(rp.regex, "a.b (x)") and not re.fullmatch(rp.regex, "aXb (x)")
    assert rp.answers == {"a.b (x)": 0, "c+d": 1}
    assert rp.gold == 1 and rp.text == "? a.b (x) or c+d?"


def test_gold_forms() -> None:
    spec = label_task(
        labels=[0, 1],
        fallback={"kind": "first_label"},
        templates=[{"id": "0-0", "prompt": "{q}", "regex": "[01]", "answers": {"0": 0, "1": 1}}],
    )
    assert gold_answer(spec, "1") == 1  # "1" in a CSV row matches the int label 1
    with pytest.raises(ValueError):
        gold_answer(spec, 7)


def test_select_templates_keeps_task_order() -> None:
    spec = label_task(
        templates=[
            {"id": f"{i}-0", "prompt": "{q}", "regex": "[0-2]", "answers": {"0": "a"}}
            for i in range(3)
        ]
    )
    assert [t.id for t in select_templates(spec, ["2-0", "0-0"])] == ["0-0", "2-0"]
    assert len(select_templates(spec, "all")) == 3
