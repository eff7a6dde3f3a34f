"""Training data export: templates x training instances, streamed to JSON Lines, with each
target written in its template's answer format (it fullmatches the template's regex and
maps back to the gold)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hakari.errors import HakariInputError
from hakari.tasks.export import export_training_data, format_score
from hakari.tasks.extract import extract_answer
from hakari.tasks.loader import load_task

STS_REGEX = r"(5(\.0{1,2})?|[0-4](\.[0-9]{1,2})?)"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


TRAIN = {
    "jnli": (
        "jnli/train-v1.1.json",
        [
            {"sentence1": "猫が寝ている。", "sentence2": "猫がいる。", "label": "entailment"},
            {"sentence1": "犬が走る。", "sentence2": "犬は茶色だ。", "label": "neutral"},
            {"sentence1": "雨が降る。", "sentence2": "晴れている。", "label": "contradiction"},
        ],
    ),
    "mnli": (
        "mnli/train.jsonl",
        [
            {"premise": "It rains.", "hypothesis": "It is wet.", "label": 0, "idx": 0},
            {"premise": "He sings.", "hypothesis": "He is sad.", "label": 1, "idx": 1},
        ],
    ),
    "jcola": (
        "jcola/in_domain_train-v1.0.json",
        [
            {"uid": 1, "sentence": "太郎が走った。", "label": 1},
            {"uid": 2, "sentence": "走ったが。", "label": 0},
        ],
    ),
    "stsb": (
        "stsb/train.jsonl",
        [
            {"sentence1": "a", "sentence2": "b", "label": 3.8},
            {"sentence1": "c", "sentence2": "d", "label": 5.0},
            {"sentence1": "e", "sentence2": "f", "label": 1.333},
            {"sentence1": "g", "sentence2": "h", "label": 0.0},
        ],
    ),
    "jsts": ("jsts/train-v1.1.json", [{"sentence1": "a", "sentence2": "b", "label": 2.4}]),
    "commonsenseqa": (
        "commonsenseqa/train.jsonl",
        [
            {
                "id": "x",
                "question": "Where do you keep milk?",
                "choices": {"label": list("ABCDE"), "text": ["fridge", "car", "sky", "sea", "bed"]},
                "answerKey": "A",
            },
            {
                "id": "y",
                "question": "What barks?",
                "choices": {"label": list("ABCDE"), "text": ["cat", "fish", "dog", "tree", "cup"]},
                "answerKey": "C",
            },
        ],
    ),
    "jcommonsenseqa": (
        "jcommonsenseqa/train-v1.1.json",
        [
            {
                "q_id": 1,
                "question": "牛乳をしまう場所は？",
                **{f"choice{i}": t for i, t in enumerate(["冷蔵庫", "車", "空", "海", "布団"])},
                "label": 0,
            }
        ],
    ),
}
SQUAD_TRAIN = {
    "data": [
        {
            "title": "梅雨",
            "paragraphs": [
                {
                    "context": "梅雨 [SEP] 梅雨は東アジアの雨季である。",
                    "qas": [
                        {
                            "id": "a",
                            "question": "梅雨は何の一種か。",
                            "answers": [{"text": "雨季", "answer_start": 14}],
                        },
                        {
                            "id": "b",
                            "question": "梅雨はどこで見られるか。",
                            "answers": [
                                {"text": "東アジア", "answer_start": 10},
                                {"text": "東アジアの", "answer_start": 10},
                            ],
                        },
                    ],
                }
            ],
        }
    ]
}


@pytest.fixture
def train_dir(tmp_path: Path) -> Path:
    for path, rows in TRAIN.values():
        write_jsonl(tmp_path / "data" / path, rows)
    (tmp_path / "data" / "jsquad").mkdir()
    (tmp_path / "data" / "jsquad" / "train-v1.1.json").write_text(
        json.dumps(SQUAD_TRAIN, ensure_ascii=False)
    )
    return tmp_path / "data"


@pytest.mark.parametrize("name", [*sorted(TRAIN), "jsquad"])
def test_export_is_the_cartesian_product_with_targets_in_each_answer_format(
    train_dir: Path, tmp_path: Path, name: str
) -> None:
    task = load_task(name)
    spec = task.spec
    out = tmp_path / "out" / f"{name}.jsonl"
    out.parent.mkdir()  # an output's missing folder is made only inside the working folder
    n = export_training_data(name, split="train", output=out, data_dir=train_dir)
    rows = read_jsonl(out)
    n_instances = 2 if name == "jsquad" else len(TRAIN[name][1])
    assert n == len(rows) == n_instances * len(spec.templates)
    assert {(r["index"], r["template_id"]) for r in rows} == {
        (i, t.id) for i in range(n_instances) for t in spec.templates
    }
    for r in rows:
        assert r["task"] == name
        template = spec.template(r["template_id"])
        assert re.fullmatch(template.regex, r["target"]), r
        assert r["prompt"].endswith(("Answer:", "答え："))
        assert "{" not in r["prompt"]
        # the target parses back to the gold through the evaluation's own extraction
        got = extract_answer(spec, r["target"], re.compile(template.regex), template.answers)
        assert not got.used_fallback


def test_label_targets_are_the_inverse_of_the_answer_map(train_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "jnli.jsonl"
    export_training_data("jnli", output=out, data_dir=train_dir)
    targets = {(r["index"], r["template_id"]): r["target"] for r in read_jsonl(out)}
    assert targets[(0, "0-0")] == "0"  # entailment
    assert targets[(1, "3-0")] == "1"  # neutral
    assert targets[(2, "8-0")] == "2"  # contradiction
    assert targets[(0, "5-1")] == "A"
    assert targets[(2, "5-1")] == "C"


def test_multiple_choice_targets(train_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "csqa.jsonl"
    export_training_data("commonsenseqa", output=out, data_dir=train_dir)
    rows = read_jsonl(out)
    targets = {(r["index"], r["template_id"]): r["target"] for r in rows}
    assert targets[(1, "2-0")] == "2"
    assert targets[(1, "2-1")] == "C"
    first = next(r for r in rows if r["index"] == 1 and r["template_id"] == "0-1")
    assert "C: dog" in first["prompt"]


def test_sts_targets_keep_the_score(train_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "stsb.jsonl"
    export_training_data("stsb", templates=["3-0"], output=out, data_dir=train_dir)
    assert [r["target"] for r in read_jsonl(out)] == ["3.8", "5.0", "1.33", "0.0"]


def test_squad_target_is_the_first_gold_answer(train_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "jsquad.jsonl"
    export_training_data("jsquad", templates="all", output=out, data_dir=train_dir)
    rows = read_jsonl(out)
    assert {r["target"] for r in rows if r["index"] == 0} == {"雨季"}
    assert {r["target"] for r in rows if r["index"] == 1} == {"東アジア"}


def test_template_selection(train_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "mnli.jsonl"
    n = export_training_data("mnli", templates=["0-0", "4-1"], output=out, data_dir=train_dir)
    assert n == 4
    assert [r["template_id"] for r in read_jsonl(out)] == ["0-0", "4-1", "0-0", "4-1"]
    assert export_training_data("mnli", templates="7-1", output=out, data_dir=train_dir) == 2


def test_unknown_template_is_one_clear_error(train_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(HakariInputError, match="unknown template id"):
        export_training_data("mnli", templates=["9-9"], output=tmp_path / "x", data_dir=train_dir)


def test_missing_train_file_leaves_no_output(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    with pytest.raises(HakariInputError, match="no local copy at"):
        export_training_data("cola", output=out, data_dir=tmp_path)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_gold_outside_the_label_set_names_the_instance(tmp_path: Path) -> None:
    rows = [
        {"sentence1": "a", "sentence2": "b", "label": "entailment"},
        {"sentence1": "a", "sentence2": "b", "label": 1},
    ]
    write_jsonl(tmp_path / "jnli" / "train-v1.1.json", rows)
    out = tmp_path / "out.jsonl"
    with pytest.raises(HakariInputError, match="instance 1") as err:
        export_training_data("jnli", output=out, data_dir=tmp_path)
    assert err.value.template == "0-0"
    assert not out.exists()


def test_sts_score_outside_the_scale_is_one_clear_error(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "stsb" / "train.jsonl", [{"sentence1": "a", "sentence2": "b", "label": 7.0}]
    )
    with pytest.raises(HakariInputError, match="cannot be written in the answer format"):
        export_training_data("stsb", output=tmp_path / "out.jsonl", data_dir=tmp_path)


def test_missing_field_is_one_clear_error(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "cola" / "train.jsonl", [{"text": "x", "label": 1}])
    with pytest.raises(HakariInputError, match="no field 'sentence'"):
        export_training_data("cola", output=tmp_path / "out.jsonl", data_dir=tmp_path)


def test_empty_split_is_one_clear_error(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "cola" / "train.jsonl", [])
    with pytest.raises(HakariInputError, match="no instances"):
        export_training_data("cola", output=tmp_path / "out.jsonl", data_dir=tmp_path)


@pytest.mark.parametrize(
    ("value", "regex", "text"),
    [
        (2.4, STS_REGEX, "2.4"),
        (3.75, STS_REGEX, "3.75"),
        (5.0, STS_REGEX, "5.0"),
        (1.333, STS_REGEX, "1.33"),
        (4.0, r"[0-5]", "4"),
        (3.6, r"[0-5]", "4"),
        (6.0, STS_REGEX, None),
    ],
)
def test_format_score(value: float, regex: str, text: str | None) -> None:
    assert format_score(value, regex) == text
