"""Hostile input to prompt spaces and JMMLU files (issue 38, findings 3, 4, 5, 7, 8, 9,
10): each case is what a user could write; each is answered at once (no hang, no
`MemoryError`), refused in one line naming the file, row, field or option (exit 2)
before any model loads, or run with a word where the data is merely odd."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

import hakari
from hakari.aggregate.budget.floor import grid_verdict
from hakari.cli import app
from hakari.errors import HakariInputError
from hakari.runner.config import answer_limits
from hakari.runner.settings import PlanOptions
from hakari.tasks.families import load_tasks
from hakari.tasks.loader import load_task
from hakari.tasks.space import build_templates, expand_task
from hakari.tasks.spacesample import MAX_TEMPLATES, all_levels, balanced_sample
from tests.helpers.cli import assert_one_line, invoke, runner
from tests.helpers.deadline import within_deadline
from tests.helpers.paths import REPO, SHARED
from tests.helpers.spaces import jmmlu_csv, space_task, text_dimensions

DATA = SHARED / "datasets"
needs_jmmlu = pytest.mark.skipif(not (DATA / "jmmlu").is_dir(), reason="../shared/datasets absent")


def _expand(path: Path, wanted: str) -> int:
    return len(expand_task(load_task(path), wanted).spec.templates)


def _refused(call: object) -> str:
    with pytest.raises(HakariInputError) as info:
        within_deadline(call)  # type: ignore[arg-type]
    line = str(info.value)
    assert "\n" not in line
    return line


# --- 3: huge spaces are answered at once ----------------------------------------------


@pytest.mark.parametrize(
    ("dims", "wanted", "needle"),
    [
        (6, "space:1000000", "at most 10,000"),  # 10^6 templates, all of them
        (12, "space:1000000000000", "at most 10,000"),  # 10^12, its size: was MemoryError
        (12, "space:all", "sample with space:N"),
    ],
)
def test_a_huge_space_asked_for_too_many_is_one_line(
    tmp_path: Path, dims: int, wanted: str, needle: str
) -> None:
    path = space_task(tmp_path, text_dimensions(dims, 10))
    line = _refused(lambda: _expand(path, wanted))
    assert "--templates" in line and needle in line and "mc.yaml" in line
    assert "space:1000000000000" not in line.split(":", 1)[1] or wanted != "space:all"


def test_a_sample_of_a_huge_space_costs_what_its_count_costs(tmp_path: Path) -> None:
    space = load_task(space_task(tmp_path, text_dimensions(12, 10))).spec.space
    assert space is not None and space.size() == 10**12
    sample = within_deadline(lambda: balanced_sample(space, MAX_TEMPLATES, 0))
    assert len({tuple(lv.values()) for lv in sample}) == MAX_TEMPLATES
    for dim in space.dimensions:
        counts = Counter(lv[dim] for lv in sample)
        assert max(counts.values()) - min(counts.values()) <= 1


@needs_jmmlu
@pytest.mark.parametrize("count", [5000, 9071])
def test_jmmlu_near_its_whole_space(count: int) -> None:
    """JMMLU's space holds 9,072 templates; `space:5000` and `space:9071` did not answer
    in 150 s (the repair of repeats recounted every row at every swap)."""
    (task,) = load_tasks(["jmmlu:marketing"])

    def expand() -> list[dict[str, str]]:
        done = expand_task(task, f"space:{count}", data_dir=DATA)
        return [dict(t.levels or {}) for t in done.spec.templates]

    chosen = within_deadline(expand)
    assert len({tuple(lv.values()) for lv in chosen}) == count
    for dim in task.spec.space.dimensions:  # type: ignore[union-attr]
        counts = Counter(lv[dim] for lv in chosen)
        assert max(counts.values()) - min(counts.values()) <= 1, dim


@needs_jmmlu
def test_the_run_configuration_of_thousands_of_templates() -> None:
    """`hakari run --templates space:9071` did not start: the answer budgets were
    compared template against template (81 M comparisons)."""
    (task,) = load_tasks(["jmmlu:marketing"])
    assert task.spec.space is not None
    chosen = all_levels(task.spec.space)[:9071]
    wide = replace(
        task,
        spec=task.spec.model_copy(
            update={"templates": build_templates(task, chosen, data_dir=DATA)}
        ),
    )
    limits = within_deadline(lambda: answer_limits(wide, PlanOptions(templates="all")))
    assert limits.max_new_chars == 8 and limits.templates is None


# --- 4: text that no tokenizer can encode ---------------------------------------------


def test_a_lone_surrogate_in_a_level_is_refused_when_read(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    path = space_task(
        tmp_path, '  dimensions:\n    instruction: [{odd: "Answer \\ud800 it.\\n"}]\n'
    )
    code, out = invoke("--model", "fake:A", "--tasks", str(path), "--templates", "space:all")
    assert_one_line(code, out, "mc.yaml", "space.dimensions.instruction[0].odd", "surrogate")
    assert not no_model_loads


def test_a_lone_surrogate_in_a_data_row_is_refused(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    path = space_task(tmp_path, "  dimensions:\n    instruction: [en_plain, en_exam]\n")
    rows = (tmp_path / "mc.jsonl").read_text().splitlines()
    rows[2] = rows[2].replace("question 2?", "question \\ud800?")
    (tmp_path / "mc.jsonl").write_text("\n".join(rows) + "\n")
    code, out = invoke("--model", "fake:A", "--tasks", str(path), "--templates", "space:all")
    assert_one_line(code, out, "mc.jsonl", "row 2", "field q", "surrogate")
    assert not no_model_loads


# --- 5: prompts that show the model the answer ----------------------------------------

LEAKS = {
    "question-is-the-gold": (
        "  dimensions:\n    instruction: [en_plain]\n",
        "gold",
        "space.question",
    ),
    "level": ('  dimensions:\n    instruction: [{cheat: "It is {gold}. "}]\n', "q", "{gold}"),
    "level-gold-index": (
        '  dimensions:\n    instruction: [{cheat: "It is {gold_index}. "}]\n',
        "q",
        "{gold_index}",
    ),
    "separator": ('  dimensions:\n    separator: [{cheat: " ({gold}) "}]\n', "q", "{gold}"),
    "delimiter": (
        '  dimensions:\n    enumerator: [{cheat: {symbols: [A, B, C, D], delimiter: "{gold} "}}]\n',
        "q",
        "{gold}",
    ),
    "block": (
        '  block: "{question}\\n{choices}\\nHint: {gold}\\n{answer_cue}"\n'
        "  dimensions:\n    answer_cue: [answer]\n",
        "q",
        "{gold}",
    ),
}


@pytest.mark.parametrize("case", sorted(LEAKS))
def test_a_space_that_shows_the_gold_is_refused(
    tmp_path: Path, no_model_loads: list[str], case: str
) -> None:
    space, question, needle = LEAKS[case]
    path = space_task(tmp_path, space, question=question)
    code, out = invoke("--model", "fake:A", "--tasks", str(path), "--templates", "space:all")
    assert_one_line(code, out, "mc.yaml", "field space", needle, "hands the model the answer")
    assert not no_model_loads


def test_a_hand_written_choice_template_reading_the_gold_column(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    """Only `{gold_index}` was refused: `{gold}` (the file's own answer column) ran."""
    path = space_task(tmp_path, "  dimensions:\n    instruction: [en_plain]\n")
    text = path.read_text().split("space:")[0]
    text += (
        'templates:\n  - id: 0-0\n    prompt: "{q} (hint: {gold})\\nA. {choice_0}\\n'
        'B. {choice_1}\\nC. {choice_2}\\nD. {choice_3}\\nAnswer:"\n'
        '    regex: "[ABCD]"\n    answers: {A: 0, B: 1, C: 2, D: 3}\n'
    )
    path.write_text(text)
    code, out = invoke("--model", "fake:A", "--tasks", str(path))
    assert_one_line(code, out, "mc.yaml", "template 0-0", "{gold}", "hands the model the answer")
    assert not no_model_loads


def test_shots_inside_the_block_are_refused(tmp_path: Path) -> None:
    """`{shots}` in `block` was filled with nothing: every few-shot example was dropped."""
    space = (
        '  block: "{shots}{question}\\n{choices}\\n{answer_cue}"\n'
        "  dimensions:\n    shots: [0, 2]\n"
    )
    path = space_task(tmp_path, space)
    line = _refused(lambda: load_task(path))
    assert "field space" in line and "{shots} goes into `prefix`" in line


# --- 7: a CSV cell longer than Python's default limit ---------------------------------


def _jmmlu_rows(n: int) -> list[list[str]]:
    return [[f"q{i}", "a", "b", "c", "d", "ABCD"[i % 4]] for i in range(n)]


def test_a_long_csv_cell_is_read(tmp_path: Path) -> None:
    """A 200,000-character question ended in `_csv.Error: field larger than field limit`."""
    rows = _jmmlu_rows(8)
    rows[5][0] = "x" * 200_000
    jmmlu_csv(tmp_path, "marketing", rows)
    from hakari.tasks.data import iter_rows

    (task,) = load_tasks(["jmmlu:marketing"])
    read = list(iter_rows(task.spec, data_dir=tmp_path, task_dir=task.task_dir))
    assert [len(r["question"]) for r in read][2] == 200_000  # rows 0-2 are the shots


def test_a_csv_cell_over_the_bound_is_one_line(tmp_path: Path, no_model_loads: list[str]) -> None:
    from hakari.tasks.data import CSV_CELL_LIMIT

    rows = _jmmlu_rows(8)
    rows[6][1] = "y" * (CSV_CELL_LIMIT + 1)
    jmmlu_csv(tmp_path, "marketing", rows)
    code, out = invoke(
        "--model", "fake:A", "--tasks", "jmmlu:marketing", "--data-dir", str(tmp_path),
        "--templates", "space:2",
    )  # fmt: skip
    assert_one_line(code, out, "marketing.csv", "row 6", "longer than 16,777,216 characters")
    assert not no_model_loads


# --- 8: one prompt counted as several templates ----------------------------------------

SAME = {
    "choice-orders": ("choice_order: [given, rotate0, rotate4, rotate8]", "'given' and 'rotate0'"),
    "shots": ('shots: [3, "03", "003"]', "'3' and '03'"),
    "texts": ('instruction: [{a: "Answer.\\n"}, {b: "Answer.\\n"}]', "'a' and 'b'"),
    "enumerators": ("enumerator: [upper, {mine: [A, B, C, D]}]", "'upper' and 'mine'"),
}


@pytest.mark.parametrize("case", sorted(SAME))
def test_levels_that_make_the_same_prompt_are_refused(tmp_path: Path, case: str) -> None:
    dimension, needle = SAME[case]
    path = space_task(tmp_path, f"  dimensions:\n    {dimension}\n")
    line = _refused(lambda: _expand(path, "space:all"))
    assert "field space.dimensions." in line and needle in line and "counted twice" in line


def test_levels_of_two_dimensions_that_add_up_to_the_same_prompt(tmp_path: Path) -> None:
    space = (
        '  dimensions:\n    instruction: [{tag: "Q: "}, {bare: ""}]\n'
        '    question_tag: [{none: ""}, {q: "Q: "}]\n'
    )
    path = space_task(tmp_path, space)
    line = _refused(lambda: _expand(path, "space:all"))
    assert "templates tag.none and bare.q are the same prompt" in line and "field space" in line


# --- 9: accepted without a word --------------------------------------------------------


def test_a_question_repeated_50_times_is_refused(tmp_path: Path, no_model_loads: list[str]) -> None:
    rows = _jmmlu_rows(24) + [["same", "a", "b", "c", "d", "A"]] * 50
    jmmlu_csv(tmp_path, "nutrition", rows)
    code, out = invoke(
        "--model", "fake:A", "--tasks", "jmmlu:nutrition", "--data-dir", str(tmp_path),
        "--templates", "space:2",
    )  # fmt: skip
    assert_one_line(code, out, "nutrition.csv", "49 of the 71 rows", "repeat", "row 22")
    assert not no_model_loads


def test_a_few_repeated_rows_are_a_note(tmp_path: Path) -> None:
    rows = _jmmlu_rows(43)
    rows[40] = list(rows[10])
    jmmlu_csv(tmp_path, "nutrition", rows)
    doc = _run(tmp_path, "jmmlu:nutrition", data_dir=tmp_path, templates="space:2")
    notes = doc["models"]["fake:A"]["tasks"]["jmmlu-nutrition"]["notes"]
    assert any("1 of the 40 rows" in n and "row 37 repeats row 7" in n for n in notes), notes


def test_a_family_with_an_empty_subject_is_refused() -> None:
    for spec in ("jmmlu:", "jmmlu: "):
        code, out = invoke("--model", "fake:A", "--tasks", spec)
        assert_one_line(code, out, "--tasks", "names no subject", "jmmlu:SUBJECT")


def test_a_level_name_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    path = space_task(tmp_path, '  dimensions:\n    instruction: [{"a\\n": "Answer.\\n"}]\n')
    line = _refused(lambda: load_task(path))
    assert "level name 'a\\n'" in line and "field space.dimensions" in line


def _run(tmp_path: Path, tasks: str | Path, **kw: object) -> dict:
    out = tmp_path / "run"
    hakari.evaluate(
        models=["fake:A"],
        tasks=[str(tasks)],
        decodings=["greedy"],
        use_cache=False,
        output_dir=out,
        n_boot=0,
        **kw,  # type: ignore[arg-type]
    )
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def space_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of a small space (its results.json has a `space` record)."""
    folder = tmp_path_factory.mktemp("space-run")
    path = space_task(
        folder,
        "  dimensions:\n    instruction: [en_plain, en_exam]\n    enumerator: [upper, number]\n",
    )
    _run(folder, path, templates="space:all")
    return folder / "run"


EDITS = {
    "share-1e308": (("dimensions", "instruction", "share"), 1e308, "share is 1e+308"),
    "share-inf": (("dimensions", "instruction", "share"), float("inf"), "share is inf"),
    "mean-nan": (("dimensions", "instruction", "levels", 0, "mean"), float("nan"), "mean is nan"),
    "eta-negative": (("dimensions", "enumerator", "eta_squared"), -0.5, "eta_squared is -0.5"),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_a_hand_edited_space_record_is_refused_by_the_report(
    space_run: Path, tmp_path: Path, case: str
) -> None:
    where, value, needle = EDITS[case]
    doc = json.loads((space_run / "results.json").read_text(encoding="utf-8"))
    node = doc["models"]["fake:A"]["tasks"]["mc"]["decodings"]["greedy"]["space"]["accuracy"]
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    edited = tmp_path / "results.json"
    edited.write_text(json.dumps(doc), encoding="utf-8")  # NaN and Infinity as Python writes
    result = runner.invoke(app, ["report", str(edited)])
    assert_one_line(result.exit_code, result.output, "results.json", needle, where[-1])


def test_a_space_record_for_a_metric_the_task_lacks_is_refused(
    space_run: Path, tmp_path: Path
) -> None:
    doc = json.loads((space_run / "results.json").read_text(encoding="utf-8"))
    dec = doc["models"]["fake:A"]["tasks"]["mc"]["decodings"]["greedy"]
    dec["space"]["f1"] = dec["space"]["accuracy"]
    edited = tmp_path / "results.json"
    edited.write_text(json.dumps(doc), encoding="utf-8")
    result = runner.invoke(app, ["report", str(edited)])
    assert_one_line(
        result.exit_code, result.output, "results.json", "'f1'", "not one of the task's metrics"
    )


# --- 10: late and wrong refusals -------------------------------------------------------


def test_an_answer_budget_beyond_the_context_is_refused_before_the_model_loads(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    space = "  dimensions:\n    instruction: [en_plain, en_exam]\n"
    path = space_task(tmp_path, space, extra="max_new_tokens: 16384")
    code, out = invoke("--model", "smollm2-135m", "--tasks", str(path), "--templates", "space:all")
    assert_one_line(code, out, "mc.yaml", "max_new_tokens", "16384", "8,192-token context")
    assert not no_model_loads
    # a local folder's config says it too; log-likelihood generates nothing
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"max_position_embeddings": 512}))
    path = space_task(tmp_path, space, extra="max_new_tokens: 600")
    code, out = invoke("--model", f"hf:{folder}", "--tasks", str(path), "--templates", "space:all")
    assert_one_line(code, out, "max_new_tokens 600", "512-token context")
    assert not no_model_loads


def test_the_default_templates_of_a_small_space_are_all_of_it(tmp_path: Path) -> None:
    """`--templates all` on a space of 4 was refused naming `space:20`, which nobody wrote."""
    space = "  dimensions:\n    instruction: [en_plain, en_exam]\n    enumerator: [upper, number]\n"
    assert _expand(space_task(tmp_path, space), "all") == 4
    written = space_task(tmp_path, space + "  default: 5\n")
    line = _refused(lambda: load_task(written))
    assert "field space" in line and "`default` asks for 5 templates; the space holds 4" in line


@needs_jmmlu
def test_the_documented_budgeted_space_run_is_honest_on_every_jmmlu_subject() -> None:
    """docs/prompt-spaces.md's `--templates space:N --budget Mx` over every subject: the
    smallest honest budget (the floor) holds on each subject's questions (its rows less the
    three few-shot examples); `space:100 --budget 2x` was refused on marketing (294 cells,
    400 needed)."""
    text = (REPO / "docs" / "prompt-spaces.md").read_text(encoding="utf-8")
    found = re.search(r"--tasks jmmlu --data-dir \S+ --templates space:(\d+) --budget (\d+)x", text)
    assert found, "the documented every-subject example"
    templates, times = int(found.group(1)), int(found.group(2))
    for path in sorted((DATA / "jmmlu").glob("*.csv")):
        with path.open(newline="", encoding="utf-8-sig") as fh:
            n = sum(1 for _ in csv.reader(fh)) - 3
        verdict = grid_verdict(templates, n, times * n)
        assert verdict.action == "estimate", (path.stem, verdict.message)
