"""The ten paper tasks: they load, have the paper's template counts, English and Japanese
twins line up, every regex accepts exactly its answer format, fallbacks and
post-processing follow Appendix B, and the local Japanese data renders."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hakari.tasks.data import iter_rows
from hakari.tasks.extract import extract_answer, fallback_prediction, normalize_qa_answer
from hakari.tasks.loader import Task, builtin_task_paths, check_task_data, load_task
from hakari.tasks.prompts import render
from tests.helpers.paths import SHARED

DATASETS = SHARED / "datasets"

# (english, japanese, templates, metrics, answer type)
PAIRS = [
    ("cola", "jcola", 14, ["accuracy", "mcc"], "label"),
    ("stsb", "jsts", 8, ["pearson", "spearman"], "number"),
    ("mnli", "jnli", 18, ["accuracy"], "label"),
    ("squad", "jsquad", 8, ["exact_match", "f1"], "text"),
    ("commonsenseqa", "jcommonsenseqa", 12, ["accuracy"], "label"),
]
ALL = [name for en, ja, *_ in PAIRS for name in (en, ja)]
LABEL_TASKS = [name for en, ja, *_, kind in PAIRS if kind == "label" for name in (en, ja)]
LOCAL_JA = {
    "jcola": 865,
    "jsts": 1457,
    "jnli": 2434,
    "jsquad": 4442,
    "jcommonsenseqa": 1119,
    "commonsenseqa": 1221,
}
# every answer text any template of the suite asks for, to probe each regex with the others
ALL_ANSWER_TEXTS = {"0", "1", "2", "3", "4", "5", "A", "B", "C", "D", "E", "F", "9", "AB", "01"}


def needs_datasets() -> Path:
    if not DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {DATASETS}")
    return DATASETS


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return {name: load_task(name) for name in ALL}


def test_all_ten_are_builtin() -> None:
    assert set(ALL) <= set(builtin_task_paths())


@pytest.mark.parametrize(("en", "ja", "count", "metric_names", "answer_type"), PAIRS)
def test_counts_languages_metrics(
    tasks: dict[str, Task],
    en: str,
    ja: str,
    count: int,
    metric_names: list[str],
    answer_type: str,
) -> None:
    for name, lang in ((en, "en"), (ja, "ja")):
        spec = tasks[name].spec
        assert spec.language == lang
        assert len(spec.templates) == count
        assert list(spec.metrics) == metric_names
        assert spec.answer_type == answer_type


@pytest.mark.parametrize(("en", "ja"), [(p[0], p[1]) for p in PAIRS])
def test_japanese_and_english_twins_have_the_same_templates(
    tasks: dict[str, Task], en: str, ja: str
) -> None:
    en_spec, ja_spec = tasks[en].spec, tasks[ja].spec
    assert [t.id for t in en_spec.templates] == [t.id for t in ja_spec.templates]
    for t_en in en_spec.templates:
        t_ja = ja_spec.template(t_en.id)
        assert t_en.regex == t_ja.regex
        assert list(t_en.answers or {}) == list(t_ja.answers or {})
        assert set(t_en.placeholders()) == set(t_ja.placeholders())


@pytest.mark.parametrize("name", ALL)
def test_template_ids_are_prompt_type_and_answer_format(tasks: dict[str, Task], name: str) -> None:
    spec = tasks[name].spec
    prompt_types = {t.id.split("-")[0] for t in spec.templates}
    formats = {t.id.split("-")[1] for t in spec.templates}
    assert len(prompt_types) * len(formats) == len(spec.templates)
    # one answer format = one regex and one answer map across prompt types
    for fmt in formats:
        same = [t for t in spec.templates if t.id.endswith(f"-{fmt}")]
        assert len({t.regex for t in same}) == 1
        assert len({tuple(sorted((t.answers or {}).items())) for t in same}) == 1


@pytest.mark.parametrize("name", LABEL_TASKS)
def test_label_regexes_accept_their_answers_and_reject_others(
    tasks: dict[str, Task], name: str
) -> None:
    spec = tasks[name].spec
    for t in spec.templates:
        keys = set(t.answers or {})
        assert keys, t.id
        for key in keys:
            assert re.fullmatch(t.regex, key), (t.id, key)
        for other in ALL_ANSWER_TEXTS - keys:
            assert not re.fullmatch(t.regex, other), (t.id, other)
        # the options the prompt lists are exactly the answer keys
        for key in keys:
            assert re.search(rf"(^|\n){re.escape(key)}[:：]", t.prompt), (t.id, key)
        # every label can be given in every answer format
        assert {str(v) for v in (t.answers or {}).values()} == {str(x) for x in spec.labels or []}


@pytest.mark.parametrize("name", ["stsb", "jsts"])
def test_sts_regex_is_the_0_to_5_scale(tasks: dict[str, Task], name: str) -> None:
    for t in tasks[name].spec.templates:
        for ok in ("0", "2.0", "3.4", "3.75", "5", "5.0", "0.25"):
            assert re.fullmatch(t.regex, ok), (t.id, ok)
        for bad in ("5.5", "6", "-1", "10", "3.456", "A", "three"):
            assert not re.fullmatch(t.regex, bad), (t.id, bad)
        assert tasks[name].spec.max_tokens_for(t) >= 4


@pytest.mark.parametrize("name", ["squad", "jsquad"])
def test_qa_regex_is_one_line_of_free_text(tasks: dict[str, Task], name: str) -> None:
    spec = tasks[name].spec
    for t in spec.templates:
        assert re.fullmatch(t.regex, "小笠原諸島")
        assert re.fullmatch(t.regex, "the Eiffel Tower in Paris")
        assert not re.fullmatch(t.regex, "two\nlines")
        assert not re.fullmatch(t.regex, "")
        assert spec.max_tokens_for(t) >= 32


EXPECTED_FALLBACK = {
    "cola": 1,  # acceptable
    "jcola": 1,
    "stsb": 2.0,
    "jsts": 2.0,
    "mnli": 0,  # entailment
    "jnli": "entailment",
    "squad": "",
    "jsquad": "",
    "commonsenseqa": "A",  # first label
    "jcommonsenseqa": 0,
}


@pytest.mark.parametrize("name", ALL)
def test_unparseable_output_gets_the_appendix_b_fallback(tasks: dict[str, Task], name: str) -> None:
    spec = tasks[name].spec
    assert fallback_prediction(spec) == EXPECTED_FALLBACK[name]
    if spec.answer_type == "text":
        return
    for t in spec.templates:
        got = extract_answer(spec, "I am not sure.", re.compile(t.regex), t.answers)
        assert got.used_fallback, t.id
        assert got.answer == EXPECTED_FALLBACK[name]


def test_fallback_labels_mean_what_appendix_b_says(tasks: dict[str, Task]) -> None:
    # the fallback label is the one the option text calls acceptable / entailment
    cola, jcola = tasks["cola"].spec, tasks["jcola"].spec
    assert "1: acceptable" in cola.template("0-0").prompt
    assert "1：容認できる" in jcola.template("0-0").prompt
    mnli, jnli = tasks["mnli"].spec, tasks["jnli"].spec
    assert mnli.template("0-0").answers == {"0": 0, "1": 1, "2": 2}
    assert "0: yes" in mnli.template("0-0").prompt
    assert jnli.template("0-1").answers == {
        "A": "entailment",
        "B": "neutral",
        "C": "contradiction",
    }
    assert tasks["commonsenseqa"].spec.labels == ["A", "B", "C", "D", "E"]
    assert tasks["jcommonsenseqa"].spec.labels == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    ("name", "template_id", "output", "answer"),
    [
        ("mnli", "3-1", "C", 2),
        ("mnli", "3-0", "The answer is 1.", 1),
        ("jnli", "0-1", "答え：B", "neutral"),
        ("cola", "2-0", "0", 0),
        ("jcola", "2-1", "A", 0),
        ("commonsenseqa", "4-0", "3", "D"),
        ("jcommonsenseqa", "5-1", "E", 4),
        ("stsb", "0-0", "3.8", 3.8),
        ("jsts", "6-0", "類似度は4.25です", 4.25),
    ],
)
def test_parsed_answers_map_to_labels(
    tasks: dict[str, Task], name: str, template_id: str, output: str, answer: object
) -> None:
    spec = tasks[name].spec
    t = spec.template(template_id)
    got = extract_answer(spec, output, re.compile(t.regex), t.answers)
    assert not got.used_fallback
    assert got.answer == answer


@pytest.mark.parametrize(
    ("name", "output", "answer"),
    [
        ("squad", '"Denver Broncos."', "Denver Broncos"),
        ("squad", "Saint Bernadette Soubirous\nExplanation: ...", "Saint Bernadette Soubirous"),
        ("jsquad", "「小笠原諸島」。", "小笠原諸島"),
        ("jsquad", "ＡＢＣ１２３", "ABC123"),  # NFKC
        ("jsquad", "\n\n雨季", "雨季"),
    ],
)
def test_qa_post_processing(tasks: dict[str, Task], name: str, output: str, answer: str) -> None:
    spec = tasks[name].spec
    t = spec.templates[0]
    assert extract_answer(spec, output, re.compile(t.regex), None).answer == answer
    assert normalize_qa_answer(f"'{answer}'!") == answer


@pytest.mark.parametrize("name", sorted(LOCAL_JA))
def test_local_data_checks_and_renders(tasks: dict[str, Task], name: str) -> None:
    data_dir = needs_datasets()
    task = tasks[name]
    assert check_task_data(task, data_dir=data_dir) == 50
    rows = list(iter_rows(task.spec, data_dir=data_dir, limit=3))
    for index, row in enumerate(rows):
        for t in task.spec.templates:
            prompt = render(task.spec, t, row, index)
            assert "{" not in prompt.text, (t.id, prompt.text)
            assert prompt.max_new_tokens == task.spec.max_tokens_for(t)
    first = render(task.spec, task.spec.templates[0], rows[0], 0)
    if name == "jnli":
        assert rows[0]["sentence2"] in first.text
    if name == "jcommonsenseqa":
        assert all(rows[0][f"choice{i}"] in first.text for i in range(5))
    if name == "commonsenseqa":
        assert all(text in first.text for text in rows[0]["choices"]["text"])


@pytest.mark.parametrize(("name", "rows"), sorted(LOCAL_JA.items()))
def test_local_eval_splits_have_the_paper_row_counts(
    tasks: dict[str, Task], name: str, rows: int
) -> None:
    data_dir = needs_datasets()
    assert sum(1 for _ in iter_rows(tasks[name].spec, data_dir=data_dir)) == rows


@pytest.mark.parametrize("name", ALL)
def test_every_regex_can_constrain_decoding(tasks: dict[str, Task], name: str) -> None:
    pytest.importorskip("llguidance")
    from hakari.backends.constrained import validate_regex

    for t in tasks[name].spec.templates:
        assert validate_regex(t.regex) is None, (t.id, t.regex)
