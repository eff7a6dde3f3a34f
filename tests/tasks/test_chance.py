"""Chance-rate baseline = the score of the Appendix B fallback given to every instance,
computed from the data (paper Tables 3 and 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hakari.errors import HakariInputError
from hakari.tasks.chance import chance_rates, split_golds, task_chance_rates
from hakari.tasks.loader import load_task
from tests.helpers.paths import SHARED

DATASETS = SHARED / "datasets"


def needs_datasets() -> Path:
    if not DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {DATASETS}")
    return DATASETS


def test_jnli_v11_validation_matches_table_3() -> None:
    rates = task_chance_rates("jnli", data_dir=needs_datasets())
    assert set(rates) == {"accuracy"}
    assert round(rates["accuracy"], 3) == 0.145
    assert rates["accuracy"] == pytest.approx(353 / 2434)


def test_jcola_in_domain_matches_table_3() -> None:
    rates = task_chance_rates("jcola", data_dir=needs_datasets())
    assert round(rates["accuracy"], 3) == 0.839
    assert rates["accuracy"] == pytest.approx(726 / 865)
    assert rates["mcc"] == 0.0


def test_jcola_out_of_domain_is_its_share_of_acceptable() -> None:
    rates = task_chance_rates("jcola", split="validation_out_of_domain", data_dir=needs_datasets())
    assert rates["accuracy"] == pytest.approx(502 / 685)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("jsts", {"pearson": 0.0, "spearman": 0.0}),
        ("jsquad", {"exact_match": 0.0, "f1": 0.0}),
    ],
)
def test_correlations_and_qa_are_zero(name: str, expected: dict[str, float]) -> None:
    assert task_chance_rates(name, data_dir=needs_datasets()) == expected


def test_multiple_choice_is_the_share_of_the_first_label() -> None:
    data_dir = needs_datasets()
    en = task_chance_rates("commonsenseqa", data_dir=data_dir)
    assert en["accuracy"] == pytest.approx(239 / 1221)  # answer key A, per the README
    golds = split_golds(load_task("jcommonsenseqa"), data_dir=data_dir)
    ja = task_chance_rates("jcommonsenseqa", data_dir=data_dir)
    assert ja["accuracy"] == pytest.approx(golds.count(0) / len(golds))


@pytest.mark.parametrize(
    ("name", "golds", "expected"),
    [
        ("cola", [1, 1, 0, 1], {"accuracy": 0.75, "mcc": 0.0}),
        ("mnli", [0, 1, 2, 2, 0], {"accuracy": 0.4}),
        ("commonsenseqa", ["B", "A", "E"], {"accuracy": 1 / 3}),
        ("stsb", [0.0, 2.5, 5.0], {"pearson": 0.0, "spearman": 0.0}),
        ("squad", [["Denver Broncos"], ["2016", "in 2016"]], {"exact_match": 0.0, "f1": 0.0}),
    ],
)
def test_chance_rates_on_given_golds(name: str, golds: list, expected: dict[str, float]) -> None:
    rates = chance_rates(load_task(name).spec, golds)
    assert rates == pytest.approx(expected)


def test_raw_and_canonical_golds_give_the_same_rates() -> None:
    spec = load_task("jnli").spec
    golds = ["entailment", "neutral", "contradiction", "entailment"]
    assert chance_rates(spec, golds) == {"accuracy": 0.5}
    squad = load_task("jsquad").spec
    assert chance_rates(squad, ["雨季"]) == chance_rates(squad, [["雨季"]])


def test_gold_outside_the_labels_is_one_clear_error() -> None:
    with pytest.raises(HakariInputError, match="instance 1: gold 7"):
        chance_rates(load_task("mnli").spec, [0, 7])


def test_no_golds_is_one_clear_error() -> None:
    with pytest.raises(HakariInputError, match="no gold answers"):
        chance_rates(load_task("cola").spec, [])


def test_rows_without_the_gold_field_are_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "cola").mkdir()
    rows = [{"sentence": "a", "label": 1}, {"sentence": "b"}]
    (tmp_path / "cola" / "validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(HakariInputError, match="row 1 has no gold field 'label'"):
        task_chance_rates("cola", data_dir=tmp_path)
