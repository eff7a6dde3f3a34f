"""The jaster sets' prompt spaces: llm-jp-eval's point of the space is template `0-N`
character for character (and every hand-written template is a point of it), Nejumi's
0-shot message is its `nejumi` layout, `space:16` is one balanced seeded sample on every
set, and a run over the space says which dimension moved each set's number.

llm-jp-eval's own prompt against `0-N` is `tests/tasks/test_jaster.py`'s; Nejumi's is
written here from wandb/llm-leaderboard 6e29db4 `scripts/evaluator/jaster.py` (the
message `f"{message_intro}\\n{instruction}\\n\\n{input}"`), not from hakari.
"""

from __future__ import annotations

from collections import Counter

import pytest

import hakari
from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend
from hakari.tasks.data import iter_rows
from hakari.tasks.families import load_tasks
from hakari.tasks.loader import Task
from hakari.tasks.prompts import render
from hakari.tasks.space import expand_task
from hakari.tasks.spacesample import select_levels
from hakari.tasks.spacespec import SpaceSelection
from tests.tasks.test_jaster import DATASETS, SETS, needs_data

# hand-written id -> the space's id of the same prompt
POINTS = {
    **{f"0-{n}": f"llmjp.alpaca.none.{n}" for n in (0, 2, 4)},
    **{f"1-{n}": f"llmjp.alpaca_bare.none.{n}" for n in (0, 2, 4)},
    **{f"2-{n}": f"reworded.alpaca.none.{n}" for n in (0, 2, 4)},
    "3-0": "reworded.plain.none.0",
}
NEJUMI_INTRO = (
    "以下に、あるタスクを説明する指示があり、それに付随する入力が更なる文脈を提供しています。"
    "リクエストを適切に完了するための回答を記述してください。"
)


def _task(name: str) -> Task:
    (task,) = load_tasks([name])
    return task


def _rows(task: Task, n: int = 3) -> list[dict]:
    return list(iter_rows(task.spec, data_dir=DATASETS, limit=n))


# MGSM's few-shot exemplars are not shipped (its yaml): its space is the others' at 0 shots
ZERO_SHOT_ONLY = ("mgsm",)
FULL = tuple(s for s in SETS if s not in ZERO_SHOT_ONLY)


@pytest.mark.parametrize("name", SETS)
def test_the_space_has_the_same_dimensions_on_every_set(name: str) -> None:
    space = _task(name).spec.space
    assert space is not None
    assert {d: list(v) for d, v in space.dimensions.items()} == {
        "instruction": ["llmjp", "reworded", "terse"],
        "layout": ["alpaca", "alpaca_bare", "nejumi", "plain"],
        "answer_format": ["none", "answer_only", "no_explanation"],
        "shots": ["0"] if name in ZERO_SHOT_ONLY else ["0", "2", "4"],
    }


def test_space_16_is_one_balanced_seeded_sample_on_every_set() -> None:
    """The sample depends on the space only: the same 16 ids on every set (so the
    leaderboard's categories pool them), every level 16/L times (±1), the same again."""
    samples = {
        name: select_levels(_task(name).spec.space, SpaceSelection(16, None), task=name, file=name)
        for name in FULL
    }
    first = samples[FULL[0]]
    assert len({tuple(lv.values()) for lv in first}) == 16
    assert all(s == first for s in samples.values())
    for dim in first[0]:
        counts = Counter(lv[dim] for lv in first)
        assert max(counts.values()) - min(counts.values()) <= 1
    space = _task("jamp").spec.space
    assert select_levels(space, SpaceSelection(16, 1), task="", file="") != first


@needs_data
@pytest.mark.parametrize("name", SETS)
def test_every_hand_written_template_is_a_point_of_the_space(name: str) -> None:
    """llmjp.alpaca.none.N (every level llm-jp-eval's) is 0-N character for character on
    the set's first items, and so is each other hand-written template its point."""
    task = _task(name)
    own_ids = {t.id for t in task.spec.templates}
    points = {own: point for own, point in POINTS.items() if own in own_ids}
    assert len(points) == (4 if name in ZERO_SHOT_ONLY else len(POINTS))
    expanded = expand_task(task, list(points.values()), data_dir=DATASETS)
    by_id = {t.id: t for t in expanded.spec.templates}
    for i, row in enumerate(_rows(task)):
        for own, point in points.items():
            want = render(task.spec, task.spec.template(own), row, i).text
            assert render(expanded.spec, by_id[point], row, i).text == want, (own, point)


@needs_data
def test_the_hand_written_ids_still_run_beside_the_space() -> None:
    task = _task("jamp")
    assert [t.id for t in expand_task(task, "all").spec.templates] == list(POINTS)
    assert [t.id for t in expand_task(task, ["0-4"]).spec.templates] == list(POINTS)
    mixed = expand_task(task, ["0-4", "terse.plain.answer_only.2"], data_dir=DATASETS)
    assert [t.id for t in mixed.spec.templates] == ["0-4", "terse.plain.answer_only.2"]
    assert len(expand_task(task, "space:16", data_dir=DATASETS).spec.templates) == 16


@needs_data
@pytest.mark.parametrize("name", ["jamp", "jemhopqa", "mawps"])
def test_the_nejumi_layout_at_0_shots_is_nejumis_message(name: str) -> None:
    task = _task(name)
    expanded = expand_task(task, ["llmjp.nejumi.none.0", "llmjp.nejumi.none.2"], data_dir=DATASETS)
    zero, two = expanded.spec.templates
    train = list(iter_rows(task.spec, split="train", data_dir=DATASETS, limit=2))
    for i, row in enumerate(_rows(task)):
        instruction = "\n".join([NEJUMI_INTRO, row["instruction"]])
        assert render(expanded.spec, zero, row, i).text == f"{instruction}\n\n{row['input']}"
        # its few-shot turns (user: input, assistant: output) flattened as text
        turns = "".join(f"{s['input']}\n{s['output']}\n\n" for s in train)
        assert render(expanded.spec, two, row, i).text == f"{instruction}\n\n{turns}{row['input']}"


@needs_data
def test_a_jaster_space_run_says_which_dimension_moved_each_number(tmp_path) -> None:
    """A stand-in model that answers each item's gold only when asked for the answer
    alone: every set's number comes with its dimensions, `answer_format` on top; the
    leaderboard view's categories are over the same 16 templates."""
    golds: dict[str, str] = {}
    for name in ("jamp", "niilc"):
        task = _task(name)
        golds |= {row["input"]: row["output"] for row in _rows(task, 4)}

    def answer(request: GenerationRequest) -> str:
        asked = max(golds, key=request.prompt.rfind)  # the question comes last
        return golds[asked] if "答えのみ" in request.prompt else "わからない"

    results = hakari.evaluate(
        models=["stand-in"],
        tasks=["jaster:jamp", "jaster:niilc"],
        decodings=["greedy"],
        templates="space:16",
        data_dir=DATASETS,
        limit=4,
        n_boot=50,
        use_cache=False,
        output_dir=tmp_path / "run",
        backend_factory=lambda spec: FakeBackend(answer),
    )
    model = results.models["stand-in"]
    for name, metric in (("jamp", "llmjp_exact_match"), ("niilc", "char_f1")):
        dec = model.tasks[name].decodings["greedy"]
        assert len(dec.templates) == 16
        assert dec.space is not None
        space = dec.space[metric]
        assert set(space.dimensions) == {"instruction", "layout", "answer_format", "shots"}
        top = max(space.dimensions, key=lambda d: space.dimensions[d].share or 0.0)
        assert top == "answer_format" and space.dimensions[top].best == "answer_only"
        assert space.dimensions[top].best_minus_worst > 0.5
    # the leaderboard view pools the sets over the same 16 templates (no 0-4 among them)
    board = results.leaderboards["jaster"]["stand-in"]["greedy"]
    qa = board.categories["QA"].score
    assert qa is not None and len(qa.per_template) == 16
    assert set(qa.per_template) == set(model.tasks["niilc"].decodings["greedy"].templates)
