"""Chat vs completion as a dimension of a prompt space: a task file's `prompt_format`
dimension, or `--vary-prompt-format` adding it to every task's space. A template's level
decides whether its prompts go in as a chat message, whatever the run's `--prompt-format`
and the task's own plain-text protocol (a jaster set's) say; the spread and its
dimensions then include it. What cannot run is refused before any model loads."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hakari
from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend
from hakari.cli.app import app
from hakari.errors import HakariInputError
from hakari.tasks.loader import load_task
from hakari.tasks.space import expand_task
from tests.tasks.test_generation_space import SPACE, gen_task

# the task's own protocol is plain text, as a jaster set's: the template's level wins
PLAIN_TEXT = "prompt_format: completion"
FORMAT_SPACE = SPACE.replace(
    "    shots: [0, 2]\n", "    shots: [0, 2]\n    prompt_format: [completion, chat]\n"
)


def right_only_in_chat(request: GenerationRequest) -> str:
    asked = int(re.findall(r"問([0-9])", request.prompt)[-1])
    return ["yes", "no"][asked % 2] if request.messages is not None else "maybe"


def test_vary_prompt_format_sends_half_the_sample_as_chat(tmp_path: Path) -> None:
    """A stand-in that answers right only as a chat message: every chat template scores
    1, every completion template 0, and the space record puts the spread on the new
    dimension; the sample is balanced over it."""
    backend = FakeBackend(right_only_in_chat, supports_chat=True)
    results = hakari.evaluate(
        models=["stand-in"],
        tasks=[str(gen_task(tmp_path, extra=PLAIN_TEXT))],
        decodings=["greedy"],
        templates="space:8",
        vary_prompt_format=True,
        limit=4,
        n_boot=50,
        use_cache=False,
        output_dir=tmp_path / "run",
        backend_factory=lambda spec: backend,
    )
    dec = results.models["stand-in"].tasks["gen"].decodings["greedy"]
    formats = {tid: (t.levels or {})["prompt_format"] for tid, t in dec.templates.items()}
    assert Counter(formats.values()) == {"completion": 4, "chat": 4}
    for tid, fmt in formats.items():
        assert tid.endswith("." + fmt)
        assert dec.templates[tid].metrics["llmjp_exact_match"] == (fmt == "chat")
    assert {r.messages is not None for r in backend.generated} == {True, False}
    assert dec.space is not None
    dims = dec.space["llmjp_exact_match"].dimensions
    top = max(dims, key=lambda d: dims[d].share or 0.0)
    assert top == "prompt_format" and dims[top].best == "chat"


def test_a_task_file_may_name_the_dimension_itself(tmp_path: Path) -> None:
    task = load_task(gen_task(tmp_path, FORMAT_SPACE))
    templates = expand_task(task, "space:all").spec.templates
    assert len(templates) == 2 * 3 * 2 * 2 * 2
    assert {t.prompt_format for t in templates} == {"completion", "chat"}
    assert all(t.id.endswith("." + str(t.prompt_format)) for t in templates)
    # a chat template and its completion twin share their text: not one prompt counted twice
    by_text = Counter(t.prompt for t in templates)
    assert set(by_text.values()) == {2}
    # --vary-prompt-format keeps a file's own dimension
    again = expand_task(task, "space:all", vary_format=True).spec.templates
    assert [t.id for t in again] == [t.id for t in templates]


@pytest.mark.parametrize(
    ("levels", "message"),
    [
        ("[completion, completion]", "given twice"),
        ("[completion, plain]", "unknown prompt format 'plain'"),
        ("[completion, {mine: chat}]", "built-in level names only"),
    ],
)
def test_a_bad_prompt_format_dimension_is_one_line(
    tmp_path: Path, levels: str, message: str
) -> None:
    space = FORMAT_SPACE.replace("[completion, chat]", levels)
    with pytest.raises(HakariInputError, match=re.escape(message)):
        load_task(gen_task(tmp_path, space))


def test_what_cannot_vary_is_refused_before_any_model(tmp_path: Path) -> None:
    path = str(gen_task(tmp_path))
    loaded: list[str] = []

    def factory(spec: str) -> FakeBackend:
        loaded.append(spec)
        return FakeBackend(right_only_in_chat, supports_chat=False)

    def run(tasks: list[str], **options: object) -> None:
        hakari.evaluate(
            models=["stand-in"], tasks=tasks, decodings=["greedy"], vary_prompt_format=True,
            limit=2, n_boot=0, use_cache=False, backend_factory=factory, **options,
        )  # fmt: skip

    with pytest.raises(HakariInputError, match="task demo_sentiment_en has no prompt space"):
        run(["demo_sentiment_en"])
    with pytest.raises(HakariInputError, match="template 0-4 of task gen is hand-written"):
        run([str(gen_task(tmp_path, extra=HAND_WRITTEN))], templates="0-4")
    # the refusal names the asked template, not the file's first hand-written one
    two = HAND_WRITTEN.replace("  - id: 0-4", "  - id: 0-0", 1) + HAND_WRITTEN.split("\n", 1)[1]
    with pytest.raises(HakariInputError, match="template 0-4 of task gen is hand-written"):
        run([str(gen_task(tmp_path, extra=two))], templates="0-4")
    with pytest.raises(HakariInputError, match="--prompt-format completion loads every model"):
        run([path], templates="space:4", prompt_format="completion")
    assert not loaded
    # a custom backend without a chat template: refused when it loads, before any prompt
    with pytest.raises(HakariInputError, match="needs a chat template; model fake has none"):
        run([path], templates="space:4")
    assert loaded == ["stand-in"]


HAND_WRITTEN = """templates:
  - id: 0-4
    prompt: "{input}"
    regex: "[^\\\\n]{1,200}"
"""


def test_cli_refuses_a_model_without_a_chat_template_in_one_line(tmp_path: Path) -> None:
    """The packaged Gemma 3 270M has no chat template: known from its files, so the run
    stops with one line, exit 2, before the model loads."""
    out = CliRunner().invoke(
        app,
        [
            "run", "--model", "gemma3-270m", "--tasks", str(gen_task(tmp_path)),
            "--templates", "space:4", "--vary-prompt-format", "--output", str(tmp_path / "o"),
        ],
    )  # fmt: skip
    assert out.exit_code == 2, out.output
    assert "model 'gemma3-270m' has none" in out.output
    assert len(out.output.strip().splitlines()) <= 3
    assert not (tmp_path / "o").exists()


def test_a_hand_written_template_may_say_its_own_format(tmp_path: Path) -> None:
    own = HAND_WRITTEN + '    prompt_format: chat\n  - id: 1-4\n    prompt: "{input}"\n'
    own += '    regex: "[^\\\\n]{1,200}"\n'
    backend = FakeBackend(right_only_in_chat, supports_chat=True)
    results = hakari.evaluate(
        models=["stand-in"], tasks=[str(gen_task(tmp_path, extra=PLAIN_TEXT + "\n" + own))],
        decodings=["greedy"], templates=["0-4", "1-4"], limit=2, n_boot=0, use_cache=False,
        backend_factory=lambda spec: backend,
    )  # fmt: skip
    scores = results.models["stand-in"].tasks["gen"].decodings["greedy"].templates
    assert {tid: t.metrics["llmjp_exact_match"] for tid, t in scores.items()} == {
        "0-4": 1.0,
        "1-4": 0.0,
    }
    no_chat = FakeBackend(right_only_in_chat, supports_chat=False)
    with pytest.raises(HakariInputError, match="template 0-4 goes in as chat") as refused:
        hakari.evaluate(
            models=["stand-in"], tasks=[str(gen_task(tmp_path, extra=PLAIN_TEXT + "\n" + own))],
            decodings=["greedy"], templates=["0-4", "1-4"], limit=2, n_boot=0, use_cache=False,
            backend_factory=lambda spec: no_chat,
        )  # fmt: skip
    assert refused.value.field is not None and refused.value.field.endswith("].prompt_format")
