"""Multiple choice with a per-instance number of choices (`choices.min_count`): rows with
3, 4 or 5 options in one task file, the uniform-guess baseline the mean of 1/k_i over
the instances evaluated (not 1/k of the label list), and the one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hakari
from hakari.errors import HakariInputError
from hakari.tasks.chance import instance_guess_rate, uniform_guess_rates
from hakari.tasks.data import iter_rows
from hakari.tasks.loader import load_task
from hakari.tasks.space import expand_task

# 3, 4, 5 and 4 options: uniform guess (1/3 + 1/4 + 1/5 + 1/4) / 4 = 31/120
OPTIONS = [["x", "y", "z"], ["a", "b", "c", "d"], ["p", "q", "r", "s", "t"], ["e", "f", "g", "h"]]
GOLDS = [2, 0, 4, 3]
EXPECTED = 31 / 120


def _task(tmp_path: Path, choices: str, rows: list[dict], *, extra: str = "") -> Path:
    data = tmp_path / "mixed.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    path = tmp_path / "mixed.yaml"
    path.write_text(
        f"""
name: mixed
language: en
data: {{eval_split: test, splits: {{test: {{file: {data}}}}}}}
target: gold
answer_type: choice
choices: {choices}
metrics: [accuracy]
max_new_chars: 4
templates:
  - id: 0-0
    prompt: "{{q}}\\n{{listing}}\\nAnswer:"
    regex: "[A-E]"
    answers: {{A: 0, B: 1, C: 2, D: 3, E: 4}}
{extra}
"""
    )
    return path


def _rows() -> list[dict]:
    return [
        {
            "q": f"question {i}?",
            "opts": opts,
            "listing": "\n".join(f"{'ABCDE'[j]}. {o}" for j, o in enumerate(opts)),
            "gold": gold,
        }
        for i, (opts, gold) in enumerate(zip(OPTIONS, GOLDS, strict=True))
    ]


def _mixed(tmp_path: Path) -> Path:
    return _task(tmp_path, "{field: opts, count: 5, min_count: 3, gold: index}", _rows())


def test_rows_keep_their_own_number_of_choices(tmp_path: Path) -> None:
    task = load_task(_mixed(tmp_path))
    rows = list(iter_rows(task.spec, task_dir=task.task_dir))
    assert [sum(1 for j in range(5) if f"choice_{j}" in r) for r in rows] == [3, 4, 5, 4]
    assert [instance_guess_rate(task.spec, r) for r in rows] == [1 / 3, 1 / 4, 1 / 5, 1 / 4]
    rates = [instance_guess_rate(task.spec, r) for r in rows]
    assert uniform_guess_rates(task.spec, rates) == {"accuracy": pytest.approx(EXPECTED)}
    assert uniform_guess_rates(task.spec) == {"accuracy": 1 / 5}  # the label list's 1/k


def test_a_run_records_the_mean_of_one_over_k(tmp_path: Path) -> None:
    results = hakari.evaluate(
        models=["fake:A"],
        tasks=[str(_mixed(tmp_path))],
        decodings=["greedy"],
        cache_dir=tmp_path / "cache",
        output_dir=tmp_path / "run",
        n_boot=0,
    )
    tres = results.models["fake:A"].tasks["mixed"]
    assert tres.uniform_guess == {"accuracy": pytest.approx(EXPECTED)}
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert doc["models"]["fake:A"]["tasks"]["mixed"]["uniform_guess"]["accuracy"] == (
        pytest.approx(EXPECTED)
    )
    assert tres.majority_answer == {"accuracy": 0.25}  # golds 2, 0, 4, 3: each once


def test_limit_takes_the_baseline_of_the_rows_evaluated(tmp_path: Path) -> None:
    results = hakari.evaluate(
        models=["fake:A"],
        tasks=[str(_mixed(tmp_path))],
        decodings=["greedy"],
        limit=2,
        cache_dir=tmp_path / "cache",
        output_dir=tmp_path / "run",
        n_boot=0,
    )
    assert results.models["fake:A"].tasks["mixed"].uniform_guess == {
        "accuracy": pytest.approx((1 / 3 + 1 / 4) / 2)
    }


def test_columns_with_trailing_empty_cells_are_fewer_choices(tmp_path: Path) -> None:
    rows = [
        {"q": f"q{i}", "listing": "-", "gold": "ABCDE"[g]}
        | {c: (opts[j] if j < len(opts) else "") for j, c in enumerate("ABCDE")}
        for i, (opts, g) in enumerate(zip(OPTIONS, GOLDS, strict=True))
    ]
    del rows[1]["E"]  # an absent column counts as empty too
    path = _task(tmp_path, "{columns: [A, B, C, D, E], min_count: 3, gold: letter}", rows)
    task = load_task(path)
    rates = [instance_guess_rate(task.spec, r) for r in iter_rows(task.spec)]
    assert rates == [1 / 3, 1 / 4, 1 / 5, 1 / 4]
    rows[2]["B"] = " "  # a gap: only the last choices may be left out
    task = load_task(_task(tmp_path, "{columns: [A, B, C, D, E], min_count: 3}", rows))
    with pytest.raises(HakariInputError, match="row 2 has an empty"):
        list(iter_rows(task.spec))


@pytest.mark.parametrize(
    ("choices", "change", "message"),
    [
        # a row below min_count
        ("{field: opts, count: 5, min_count: 4, gold: index}", {}, r"row 0 has 3 choices.*4–5"),
        # without min_count every row must have `count` choices, as before
        ("{field: opts, count: 5, gold: index}", {}, r"row 0 has 3 choices.*takes 5\b"),
        # a gold past the row's own choices
        ("{field: opts, count: 5, min_count: 3, gold: index}", {"gold": 3}, r"an index 0–2"),
    ],
)
def test_bad_counts_are_one_error_naming_the_row(
    tmp_path: Path, choices: str, change: dict, message: str
) -> None:
    rows = _rows()
    rows[0] |= change
    task = load_task(_task(tmp_path, choices, rows))
    with pytest.raises(HakariInputError, match=message):
        list(iter_rows(task.spec))


def test_min_count_above_the_choices_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HakariInputError, match="min_count"):
        load_task(_task(tmp_path, "{field: opts, count: 4, min_count: 5, gold: index}", _rows()))


def test_a_space_needs_one_number_of_choices(tmp_path: Path) -> None:
    space = "space: {question: q, dimensions: {enumerator: [upper]}}"
    choices = "{field: opts, count: 5, min_count: 3, gold: index}"
    path = _task(tmp_path, choices, _rows(), extra=space)
    with pytest.raises(HakariInputError, match=r"rows have 3–5 \(drop `choices.min_count`"):
        expand_task(load_task(path), "space:1")
