"""Prompt spaces of generation tasks (no choices: the answer is text): layouts, examples
that answer their gold text, the checks a generation space gets, and a run whose
results say which dimension moved the score, from a stand-in backend.

The jaster sets' spaces, on the shipped data, are in `tests/tasks/test_jaster_space.py`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import hakari
from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend
from hakari.errors import HakariInputError
from hakari.tasks.data import iter_rows
from hakari.tasks.loader import Task, load_task
from hakari.tasks.prompts import render
from hakari.tasks.space import expand_task

SPACE = """space:
  question: input
  shots_split: dev
  regex: "[^\\\\n]{1,200}"
  dimensions:
    instruction:
      - {own: "{instruction}"}
      - {short: "答えよ。"}
    layout:
      - alpaca
      - plain
      - {mine: {prefix: "Q&A {instruction}{answer_format}\\n{shots}", block: "Q: {question}\\nA:"}}
    answer_format: [none, answer_only]
    shots: [0, 2]
"""


def gen_task(folder: Path, space: str = SPACE, *, extra: str = "") -> Path:
    """`folder/gen.yaml`: a text task over `folder/gen.jsonl` (rows `input`, `output`,
    `instruction`) with the given `space:` block."""
    data = folder / "gen.jsonl"
    with data.open("w", encoding="utf-8") as fh:
        for i in range(8):
            row = {"input": f"問{i}", "output": ["yes", "no"][i % 2], "instruction": "指示文。"}
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    path = folder / "gen.yaml"
    path.write_text(
        f"""name: gen
language: ja
data:
  eval_split: test
  splits: {{test: {{file: {data}}}, dev: {{file: {data}}}}}
target: output
answer_type: text
answer_cut: blank-line
fallback: {{kind: text}}
metrics: [llmjp_exact_match]
max_new_tokens: 4
{extra}
{space}""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def gen(tmp_path: Path) -> Task:
    return load_task(gen_task(tmp_path))


def _prompt(task: Task, template_id: str, row: int = 3) -> str:
    (t,) = expand_task(task, [template_id]).spec.templates
    rows = list(iter_rows(task.spec, task_dir=task.task_dir))
    return render(task.spec, t, rows[row], row).text


def test_each_layout_writes_its_frame_and_examples(gen: Task) -> None:
    header = (
        "以下は、タスクを説明する指示と、文脈のある入力の組み合わせです。"
        "要求を適切に満たす応答を書きなさい。"
    )
    shot = "\n\n### 入力:\n問{i}\n\n### 応答:\n{o}"
    assert _prompt(gen, "own.alpaca.none.2") == (
        f"{header}\n\n### 指示:\n指示文。"
        + shot.format(i=0, o="yes")
        + shot.format(i=1, o="no")
        + "\n\n### 入力:\n問3\n\n### 応答:\n"
    )
    assert _prompt(gen, "short.plain.answer_only.2") == (
        "答えよ。\n答えのみを出力してください。\n\n問0\n答え：yes\n\n問1\n答え：no\n\n問3\n答え："
    )
    # a layout of the file's own; "A:" ends in ASCII: a space before each example's answer
    assert (
        _prompt(gen, "own.mine.none.2")
        == "Q&A 指示文。\nQ: 問0\nA: yes\n\nQ: 問1\nA: no\n\nQ: 問3\nA:"
    )


def test_the_whole_space_is_ordinary_text_templates(gen: Task) -> None:
    full = expand_task(gen, "space:all").spec.templates
    assert len(full) == 2 * 3 * 2 * 2 == gen.spec.space.size()
    for t in full:
        assert t.answers is None and t.regex == "[^\\n]{1,200}"
        assert t.levels is not None and t.id == ".".join(t.levels.values())
    assert len({t.prompt for t in full}) == len(full)
    assert len(expand_task(gen, "space:5").spec.templates) == 5


# the built-in alpaca_bare written out: one frame under two names
AGAIN = (
    '      - {again: {prefix: "### 指示:\\n{instruction}{answer_format}{shots}", '
    'block: "\\n\\n### 入力:\\n{question}\\n\\n### 応答:\\n", answer_prefix: "", '
    'shot_end: ""}}\n'
)
REFUSED = {
    "enumerator": (
        SPACE.replace("    shots: [0, 2]\n", "    shots: [0, 2]\n    enumerator: [upper]\n"),
        "dimension 'enumerator' needs choices",
    ),
    "no-regex": (SPACE.replace('  regex: "[^\\\\n]{1,200}"\n', ""), "needs `regex`"),
    "choices-slot": (
        SPACE.replace('block: "Q: {question}\\nA:"', 'block: "Q: {question}\\n{choices}"'),
        "shows {choices}: the task has no choices",
    ),
    "no-question": (
        SPACE.replace('block: "Q: {question}\\nA:"', 'block: "Q:"'),
        "layout 'mine': `block` must contain {question}",
    ),
    "not-placed": (
        SPACE.replace("{instruction}{answer_format}\\n{shots}", "{instruction}\\n{shots}"),
        "layout 'mine': dimension 'answer_format' is not placed",
    ),
    "prefix-and-layout": (
        SPACE.replace("  shots_split: dev\n", '  shots_split: dev\n  prefix: "{shots}"\n'),
        "`prefix` and a `layout` dimension",
    ),
    "same-layout-twice": (
        SPACE.replace("      - plain\n", "      - plain\n      - alpaca_bare\n" + AGAIN),
        "levels 'alpaca_bare' and 'again' of layout make the same prompts",
    ),
    "gold-in-layout": (
        SPACE.replace('block: "Q: {question}\\nA:"', 'block: "Q: {question} ({output})\\nA:"'),
        "reads {output}, the gold field",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_bad_generation_space_is_one_line(tmp_path: Path, case: str) -> None:
    space, message = REFUSED[case]
    with pytest.raises(HakariInputError) as info:
        task = load_task(gen_task(tmp_path, space))
        expand_task(task, "space:all")
    assert message in str(info.value)
    assert "\n" not in str(info.value).strip()


def test_a_label_task_without_choices_gets_no_space(tmp_path: Path) -> None:
    path = gen_task(tmp_path)
    text = path.read_text(encoding="utf-8")
    for old, new in (
        ("answer_type: text\nanswer_cut: blank-line\n", "answer_type: label\nlabels: [yes, no]\n"),
        ("fallback: {kind: text}", "fallback: {kind: first_label}"),
        ("[llmjp_exact_match]", "[accuracy]"),
    ):
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(HakariInputError, match="a `space` needs a multiple-choice task"):
        load_task(path)


def test_an_example_without_its_answer_is_one_line(tmp_path: Path) -> None:
    path = gen_task(tmp_path)
    data = tmp_path / "gen.jsonl"
    rows = data.read_text(encoding="utf-8").splitlines()
    rows[1] = json.dumps({"input": "問1", "output": "", "instruction": "指示文。"})
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(HakariInputError, match="a few-shot example row has no answer"):
        expand_task(load_task(path), ["own.plain.none.2"])


def test_a_run_says_which_dimension_moved_the_score(tmp_path: Path) -> None:
    """A stand-in model that answers right only under the alpaca layout: every template
    records its levels, and the space record puts the variance on `layout`."""
    path = gen_task(tmp_path)

    def answer(request: GenerationRequest) -> str:
        asked = int(re.findall(r"問([0-9])", request.prompt)[-1])  # the last question shown
        return ["yes", "no"][asked % 2] if "### 応答" in request.prompt else "maybe"

    out = tmp_path / "run"
    results = hakari.evaluate(
        models=["stand-in"],
        tasks=[str(path)],
        decodings=["greedy"],
        templates="space:all",
        use_cache=False,
        output_dir=out,
        n_boot=50,
        backend_factory=lambda spec: FakeBackend(answer),
    )
    dec = results.models["stand-in"].tasks["gen"].decodings["greedy"]
    assert all(t.levels is not None for t in dec.templates.values())
    for tid, t in dec.templates.items():
        want = 1.0 if t.levels and t.levels["layout"] == "alpaca" else 0.0
        assert t.metrics["llmjp_exact_match"] == want, tid
    assert dec.space is not None
    space = dec.space["llmjp_exact_match"]
    assert set(space.dimensions) == {"instruction", "layout", "answer_format", "shots"}
    top = max(space.dimensions, key=lambda d: space.dimensions[d].share or 0.0)
    assert top == "layout" and space.dimensions["layout"].best == "alpaca"
    written = json.loads((out / "results.json").read_text(encoding="utf-8"))
    node = written["models"]["stand-in"]["tasks"]["gen"]["decodings"]["greedy"]
    assert set(node["space"]["llmjp_exact_match"]["dimensions"]) == set(space.dimensions)
