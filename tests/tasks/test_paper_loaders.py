"""Loading the paper tasks' data: the shipped Japanese files, small GLUE/SQuAD-format files
written here (CoLA, STS-B, MNLI and SQuAD cannot be obtained offline), the hub sources
(with `datasets.load_dataset` replaced by a recorder), and one clear error for a missing
file, a malformed file, a missing field or a label in the wrong encoding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pytest

from hakari.backends import hub
from hakari.errors import HakariInputError
from hakari.tasks.data import iter_rows
from hakari.tasks.loader import check_task_data, load_task
from hakari.tasks.prompts import render
from tests.helpers.paths import SHARED

DATASETS = SHARED / "datasets"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


# Rows in the Hugging Face layout of nyu-mll/glue and rajpurkar/squad.
COLA_ROWS = [
    {"sentence": "The cat sat on the mat.", "label": 1, "idx": 0},
    {"sentence": "Mat the on sat cat the.", "label": 0, "idx": 1},
    {"sentence": "John seems to be happy.", "label": 1, "idx": 2},
]
STSB_ROWS = [
    {
        "sentence1": "A man is playing a guitar.",
        "sentence2": "A man plays guitar.",
        "label": 4.8,
        "idx": 0,
    },
    {"sentence1": "A woman is slicing onions.", "sentence2": "A dog runs.", "label": 0.0, "idx": 1},
    {
        "sentence1": "Kids play soccer.",
        "sentence2": "Children are playing football.",
        "label": 3.75,
        "idx": 2,
    },
]
MNLI_ROWS = [
    {
        "premise": "The shop opens at nine.",
        "hypothesis": "The shop opens in the morning.",
        "label": 0,
        "idx": 0,
    },
    {"premise": "He bought a car.", "hypothesis": "The car is red.", "label": 1, "idx": 1},
    {"premise": "She is asleep.", "hypothesis": "She is running a marathon.", "label": 2, "idx": 2},
]
SQUAD_DOC = {
    "version": "1.1",
    "data": [
        {
            "title": "Super_Bowl_50",
            "paragraphs": [
                {
                    "context": "Super Bowl 50 was won by the Denver Broncos in 2016.",
                    "qas": [
                        {
                            "id": "q1",
                            "question": "Who won Super Bowl 50?",
                            "answers": [
                                {"text": "Denver Broncos", "answer_start": 29},
                                {"text": "the Denver Broncos", "answer_start": 25},
                            ],
                        },
                        {
                            "id": "q2",
                            "question": "When was Super Bowl 50 played?",
                            "answers": [{"text": "2016", "answer_start": 47}],
                        },
                    ],
                }
            ],
        }
    ],
}


@pytest.fixture
def glue_dir(tmp_path: Path) -> Path:
    write_jsonl(tmp_path / "cola" / "validation.jsonl", COLA_ROWS)
    write_jsonl(tmp_path / "stsb" / "validation.jsonl", STSB_ROWS)
    write_jsonl(tmp_path / "mnli" / "validation_matched.jsonl", MNLI_ROWS)
    (tmp_path / "squad").mkdir()
    (tmp_path / "squad" / "dev-v1.1.json").write_text(json.dumps(SQUAD_DOC))
    return tmp_path


@pytest.mark.parametrize(("name", "n_rows"), [("cola", 3), ("stsb", 3), ("mnli", 3), ("squad", 2)])
def test_english_tasks_read_local_glue_and_squad_files(
    glue_dir: Path, name: str, n_rows: int
) -> None:
    task = load_task(name)
    assert check_task_data(task, data_dir=glue_dir) == n_rows
    rows = list(iter_rows(task.spec, data_dir=glue_dir))
    assert len(rows) == n_rows
    for t in task.spec.templates:
        prompt = render(task.spec, t, rows[0], 0)
        assert "{" not in prompt.text


def test_gold_forms(glue_dir: Path) -> None:
    def first_gold(name: str) -> Any:
        task = load_task(name)
        row = next(iter_rows(task.spec, data_dir=glue_dir))
        return render(task.spec, task.spec.templates[0], row, 0).gold

    assert first_gold("cola") == 1
    assert first_gold("stsb") == 4.8
    assert first_gold("mnli") == 0
    assert first_gold("squad") == ["Denver Broncos", "the Denver Broncos"]


def test_squad_rows_carry_title_context_and_all_answers(glue_dir: Path) -> None:
    task = load_task("squad")
    row = next(iter_rows(task.spec, data_dir=glue_dir))
    prompt = render(task.spec, task.spec.template("0-0"), row, 0)
    assert "about Super_Bowl_50:" in prompt.text
    assert SQUAD_DOC["data"][0]["paragraphs"][0]["context"] in prompt.text
    assert prompt.text.endswith("Answer:")


@pytest.mark.parametrize(
    ("name", "path", "rows"),
    [
        ("jcola", "jcola/in_domain_valid-v1.0.json", 865),
        ("jsts", "jsts/valid-v1.1.json", 1457),
        ("jnli", "jnli/valid-v1.1.json", 2434),
        ("jsquad", "jsquad/valid-v1.1.json", 4442),
        ("jcommonsenseqa", "jcommonsenseqa/valid-v1.1.json", 1119),
        ("commonsenseqa", "commonsenseqa/validation.jsonl", 1221),
    ],
)
def test_shipped_files_load_through_data_dir(name: str, path: str, rows: int) -> None:
    if not DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {DATASETS}")
    task = load_task(name)
    split = task.spec.data.splits[task.spec.data.eval_split]
    assert split.file == path
    assert sum(1 for _ in iter_rows(task.spec, data_dir=DATASETS)) == rows


@pytest.mark.parametrize(
    ("name", "split", "file_rows"),
    [
        ("jcola", "validation_out_of_domain", 685),
        ("jnli", "validation_v1.3", 2434),
        ("jnli", "test", 2508),
        ("jsts", "test", 1589),
        ("jsquad", "test", 4420),
        ("jcommonsenseqa", "test", 1118),
    ],
)
def test_other_shipped_splits(name: str, split: str, file_rows: int) -> None:
    if not DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {DATASETS}")
    task = load_task(name)
    assert check_task_data(task, data_dir=DATASETS, split=split) == 50
    assert sum(1 for _ in iter_rows(task.spec, split=split, data_dir=DATASETS)) == file_rows


# --------------------------------------------------------------------------- hub sources

HUB = {
    "cola": ("nyu-mll/glue", "cola", "validation", None),
    "stsb": ("nyu-mll/glue", "stsb", "validation", None),
    "mnli": ("nyu-mll/glue", "mnli", "validation_matched", None),
    "squad": ("rajpurkar/squad", None, "validation", None),
    "commonsenseqa": ("tau/commonsense_qa", None, "validation", None),
    "jcola": ("shunk031/JGLUE", "JCoLA", "validation", None),
    "jsts": ("shunk031/JGLUE", "JSTS", "validation", None),
    "jnli": ("shunk031/JGLUE", "JNLI", "validation", None),
    "jsquad": ("shunk031/JGLUE", "JSQuAD", "validation", None),
    "jcommonsenseqa": ("shunk031/JGLUE", "JCommonsenseQA", "validation", None),
}
# One row per task in the layout (and label encoding) the hub datasets yield.
HUB_ROWS: dict[str, dict[str, Any]] = {
    "cola": COLA_ROWS[0],
    "stsb": STSB_ROWS[0],
    "mnli": MNLI_ROWS[2],
    "squad": {
        "id": "q1",
        "title": "T",
        "context": "C",
        "question": "Q?",
        "answers": {"text": ["a"], "answer_start": [0]},
    },
    "commonsenseqa": {
        "id": "x",
        "question": "Q?",
        "question_concept": "c",
        "choices": {"label": list("ABCDE"), "text": list("vwxyz")},
        "answerKey": "C",
    },
    "jcola": {
        "uid": 1,
        "source": "s",
        "label": 1,
        "diacritic": "g",
        "sentence": "文。",
        "original": "文。",
    },
    "jsts": {
        "sentence_pair_id": "0",
        "yjcaptions_id": "y",
        "sentence1": "a",
        "sentence2": "b",
        "label": 2.4,
    },
    "jnli": {
        "sentence_pair_id": "0",
        "yjcaptions_id": "y",
        "sentence1": "a",
        "sentence2": "b",
        "label": 0,
    },  # ClassLabel [entailment, contradiction, neutral] -> int
    "jsquad": {
        "id": "q",
        "title": "T",
        "context": "T [SEP] C",
        "question": "Q?",
        "answers": {"text": ["C"], "answer_start": [6]},
        "is_impossible": False,
    },
    "jcommonsenseqa": {
        "q_id": 1,
        "question": "Q?",
        "choice0": "a",
        "choice1": "b",
        "choice2": "c",
        "choice3": "d",
        "choice4": "e",
        "label": 3,
    },
}


@pytest.fixture(autouse=True)
def hub_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test here asks the real hub whether it answers."""
    monkeypatch.setattr(hub, "hub_dataset_problem", lambda repo_id, revision: None)


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []

    def load_dataset(path: str, name: str | None = None, *, split: str, revision: Any = None):
        calls.append((path, name, split, revision))
        for task_name, (p, n, _, _) in HUB.items():
            if (p, n) == (path, name):
                return [HUB_ROWS[task_name]]
        raise FileNotFoundError(path)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


@pytest.mark.parametrize("name", sorted(HUB))
def test_hub_sources(fake_hub: list[tuple[Any, ...]], name: str) -> None:
    task = load_task(name)
    if name == "jnli":
        with pytest.raises(HakariInputError, match="gold label 0, not in labels"):
            check_task_data(task)
    else:
        assert check_task_data(task) == 1
    assert fake_hub == [HUB[name]]


@pytest.mark.parametrize("name", sorted(HUB))
def test_train_split_comes_from_the_hub_train_split(
    fake_hub: list[tuple[Any, ...]], name: str
) -> None:
    task = load_task(name)
    assert len(list(iter_rows(task.spec, split="train"))) == 1
    path, config, _, revision = HUB[name]
    assert fake_hub == [(path, config, "train", revision)]


def test_hub_failure_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(HakariInputError, match="--data-dir"):
        check_task_data(load_task("mnli"))


def test_an_unreachable_hub_reads_the_local_cache_without_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 26 §4: without a network, `datasets` retried every request for ~25 s. Where
    the hub does not answer the one probe, the load runs in the libraries' offline mode
    (the local cache at once) and a miss is one line saying why."""
    from huggingface_hub import constants

    seen: list[tuple[bool, bool]] = []

    def load_dataset(*args: Any, **kwargs: Any) -> Any:
        seen.append((constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE))
        raise ConnectionError("Couldn't reach the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    unreachable = "the hub cannot be reached (ConnectError: Name or service not known)"
    monkeypatch.setattr(hub, "hub_dataset_problem", lambda repo_id, revision: unreachable)
    before = (constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE)
    with pytest.raises(HakariInputError) as err:
        check_task_data(load_task("mnli"))
    assert seen == [(True, True)]
    assert (constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE) == before
    assert f"not in the local cache and {unreachable}" in str(err.value)
    assert "\n" not in str(err.value)


# --------------------------------------------------------------------------- errors


def test_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(HakariInputError, match="no local copy at") as err:
        check_task_data(load_task("cola"), data_dir=tmp_path)
    assert err.value.file == str(tmp_path / "cola" / "validation.jsonl")


def test_missing_train_file_is_one_clear_error(glue_dir: Path) -> None:
    with pytest.raises(HakariInputError, match="no local copy at") as err:
        list(iter_rows(load_task("mnli").spec, split="train", data_dir=glue_dir))
    assert err.value.file == str(glue_dir / "mnli" / "train.jsonl")


def test_unknown_split_is_one_clear_error() -> None:
    with pytest.raises(HakariInputError, match="split 'dev' is not defined"):
        list(iter_rows(load_task("jnli").spec, split="dev"))


def test_malformed_jsonl_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "stsb" / "validation.jsonl"
    write_jsonl(path, STSB_ROWS[:1])
    with path.open("a") as fh:
        fh.write('{"sentence1": "broken", \n')
    with pytest.raises(HakariInputError, match="line 2: not valid JSON") as err:
        list(iter_rows(load_task("stsb").spec, data_dir=tmp_path))
    assert err.value.file == str(path)


def test_malformed_squad_json_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "squad").mkdir()
    (tmp_path / "squad" / "dev-v1.1.json").write_text(json.dumps([{"context": "x"}]))
    with pytest.raises(HakariInputError, match="top-level 'data' list"):
        check_task_data(load_task("squad"), data_dir=tmp_path)
    (tmp_path / "squad" / "dev-v1.1.json").write_text("{not json")
    with pytest.raises(HakariInputError, match="not valid JSON"):
        check_task_data(load_task("squad"), data_dir=tmp_path)


def test_squad_question_without_answers_is_one_clear_error(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(SQUAD_DOC))
    del doc["data"][0]["paragraphs"][0]["qas"][0]["answers"]
    (tmp_path / "squad").mkdir()
    (tmp_path / "squad" / "dev-v1.1.json").write_text(json.dumps(doc))
    with pytest.raises(HakariInputError, match="missing 'answers'"):
        check_task_data(load_task("squad"), data_dir=tmp_path)


@pytest.mark.parametrize(
    ("name", "path", "row", "message"),
    [
        (
            "cola",
            "cola/validation.jsonl",
            {"text": "No sentence field.", "label": 1},
            r"placeholder \{sentence\} is not a field",
        ),
        (
            "mnli",
            "mnli/validation_matched.jsonl",
            {"premise": "p", "label": 0},
            r"placeholder \{hypothesis\} is not a field",
        ),
        (
            "stsb",
            "stsb/validation.jsonl",
            {"sentence1": "a", "sentence2": "b"},
            "target is not a field",
        ),
        (
            "commonsenseqa",
            "commonsenseqa/validation.jsonl",
            {
                "question": "q",
                "choices": {"label": list("ABC"), "text": list("abc")},
                "answerKey": "A",
            },
            r"placeholder \{choice3\} \(mapped to 'choices.text.3'\) is not a field",
        ),
    ],
)
def test_missing_field_is_one_clear_error(
    tmp_path: Path, name: str, path: str, row: dict[str, Any], message: str
) -> None:
    write_jsonl(tmp_path / path, [row])
    with pytest.raises(HakariInputError, match=message) as err:
        check_task_data(load_task(name), data_dir=tmp_path)
    assert err.value.file is not None and err.value.file.endswith(f"{name}.yaml")


@pytest.mark.parametrize(
    ("name", "path", "row"),
    [
        # JNLI gold given as the hub's ClassLabel int instead of the label name
        ("jnli", "jnli/valid-v1.1.json", {"sentence1": "a", "sentence2": "b", "label": 2}),
        # MNLI gold given as a name instead of GLUE's int
        (
            "mnli",
            "mnli/validation_matched.jsonl",
            {"premise": "a", "hypothesis": "b", "label": "entailment"},
        ),
        # CommonsenseQA gold as an index instead of a letter
        (
            "commonsenseqa",
            "commonsenseqa/validation.jsonl",
            {
                "question": "q",
                "choices": {"label": list("ABCDE"), "text": list("abcde")},
                "answerKey": 0,
            },
        ),
    ],
)
def test_label_in_the_wrong_encoding_is_one_clear_error(
    tmp_path: Path, name: str, path: str, row: dict[str, Any]
) -> None:
    write_jsonl(tmp_path / path, [row])
    with pytest.raises(HakariInputError, match="not in labels") as err:
        check_task_data(load_task(name), data_dir=tmp_path)
    assert err.value.field == "labels"
