"""Prompt construction against the reference's rules, and generation with a fake backend."""

from __future__ import annotations

import hashlib
import json
import lzma
from pathlib import Path

import pytest

from hakari.backends.base import (
    GenerationRequest,
)
from hakari.backends.cache import ResponseCache
from hakari.backends.fake import FakeBackend
from hakari.pfgen.data import Example
from hakari.pfgen.generate import (
    GenerationSettings,
    config_hash,
    config_json,
    generate_trials,
    write_run,
)
from hakari.pfgen.prompts import (
    build_prompt,
    decode_prefix,
    few_shot_examples,
    postprocess,
    sampling_seed,
    stop_sequences,
)
from hakari.pfgen.trials import identify_trials, read_trials
from tests.helpers.paths import SHARED

POOL = [Example(f"質問{i:02d}？", f"回答{i:02d}です。") for i in range(50)]


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def test_twenty_examples_sorted_by_sha1_exclude_the_target():
    shots = few_shot_examples(POOL, "質問07？", trial=3)
    assert len(shots) == 20
    assert all(e.question != "質問07？" for e in shots)
    expected = sorted((e for e in POOL if e.question != "質問07？"),
                      key=lambda e: sha1(f"::3::{e.question}"))[:20]  # fmt: skip
    assert shots == expected
    # the order does not depend on the target: another target sees the same order
    other = few_shot_examples(POOL, "質問08？", trial=3)
    common = [e for e in shots if e.question != "質問08？"]
    assert other[: len(common)] == common
    assert few_shot_examples(POOL, "質問07？", trial=4) != shots


def test_completion_prompt_layout():
    prompt = build_prompt(POOL, "質問07？", "completion", trial=1)
    shots = few_shot_examples(POOL, "質問07？", 1)
    body = "\n\n".join(f"Q: {e.question}\nA: {e.answer}" for e in shots)
    assert prompt.text == "## 回答例\n" + body + "\n\nQ: 質問07？\nA:"
    assert stop_sequences("completion") == ("Q:", "\n\n")


def test_qa_prompt_layout():
    prompt = build_prompt(POOL, "質問07？", "qa", trial=1, prefix="前置き")
    assert prompt.text is not None
    assert prompt.text.startswith(
        "前置き例と同様の文体及び文字数で、質問に1行で答えてください。\n\n## 回答例\nQ: "
    )
    assert prompt.text.endswith("\n\n## 質問\nQ: 質問07？")
    assert stop_sequences("qa") == ("Q:",)


def test_chat_prompt_layout():
    prompt = build_prompt(POOL, "質問07？", "chat", trial=1)
    assert prompt.system is not None and prompt.text is None
    assert prompt.system.startswith(
        "例と同様の文体及び文字数で、ユーザの質問に1行で答えてください。\n\n## 回答例\n"
    )
    assert not prompt.system.endswith("\n")
    assert prompt.user == "Q: 質問07？"


def test_seed_prefix_and_postprocessing_follow_the_reference():
    assert sampling_seed(1) == int(sha1("::1"), 16) % 2**31
    assert sampling_seed(2, "x") == int(sha1("x::2"), 16) % 2**31
    assert decode_prefix("a\\nb") == "a\nb"
    assert decode_prefix("日本\\n") == "日本\n"
    assert postprocess(" Q: x A: 答え ", "qa") == "答え"
    assert postprocess(" A: 答え ", "completion") == "A: 答え"
    assert postprocess("   ", "chat") == ""


def test_config_hash_is_the_reference_folder_name():
    settings = GenerationSettings(model="pfnet/plamo-2-8b", engine="hf")
    published = SHARED / "pfgen-bench"
    folder = published / "result" / "pfnet" / "plamo-2-8b" / "f5b6a4d"
    assert config_hash(settings) == "f5b6a4d"
    if (folder / "config.json").is_file():
        assert json.loads(config_json(settings)) == json.loads((folder / "config.json").read_text())


def question_of(request: GenerationRequest) -> str:
    text = request.prompt or (request.messages[-1].content if request.messages else "")
    return text.rsplit("Q: ", 1)[-1].removesuffix("\nA:")


def trial_of(request: GenerationRequest) -> int:
    for trial in range(1, 100):
        if request.seed == sampling_seed(trial):
            return trial
    return -1


def pfgen_fake(
    empty_first: frozenset[str] = frozenset(), always_empty: frozenset[str] = frozenset()
) -> FakeBackend:
    """Deterministic: the answer depends on the prompt and the seed. Questions in
    `empty_first` answer empty on the first round, those in `always_empty` every time."""

    def respond(request: GenerationRequest) -> str:
        question = question_of(request)
        first_round = request.seed == sampling_seed(trial_of(request))
        if question in always_empty or (question in empty_first and first_round):
            return ""
        assert request.seed is not None
        return f" A: {question}の答え{request.seed % 97}。 "

    return FakeBackend(respond, name="fake-pfgen")


QUESTIONS = ["質問01？", "質問02？", "質問03？"]


def test_generation_requests_resume_and_output(tmp_path: Path):
    cache = ResponseCache(tmp_path / "responses.sqlite3")
    backend = pfgen_fake()
    settings = GenerationSettings(model="fake", mode="qa", num_trials=4)
    progress: list[tuple[int, int]] = []
    report = generate_trials(
        backend,
        POOL,
        QUESTIONS,
        settings,
        cache=cache,
        on_progress=lambda d, t: progress.append((d, t)),
    )
    assert report.generated == 12 and len(backend.generated) == 12
    assert progress[-1] == (12, 12)
    first = backend.generated[0]
    assert first.max_new_tokens == 300 and first.stop == ("Q:",)
    assert (first.temperature, first.top_p, first.top_k) == (1.0, 0.98, 0)
    assert first.seed == sampling_seed(1)
    assert first.messages is not None and first.messages[0].role == "user"
    assert report.rows[0]["answer"] == f"質問01？の答え{sampling_seed(1) % 97}。"  # after "A:"

    again = pfgen_fake()
    resumed = generate_trials(again, POOL, QUESTIONS, settings, cache=cache)
    assert resumed.generated == 0 and again.generated == []
    assert [r["answer"] for r in resumed.rows] == [r["answer"] for r in report.rows]

    path = write_run(tmp_path / "run", settings, report.rows)
    raw = lzma.decompress(path.read_bytes())
    lines = raw.splitlines()
    assert lines == sorted(lines)  # byte-sorted like upstream
    trials = read_trials(path)
    ids = identify_trials(trials.rows)
    assert ids.method == "trial field" and sorted(set(ids.labels or [])) == [1, 2, 3, 4]
    assert json.loads((tmp_path / "run" / "config.json").read_text())["mode"] == "qa"


def test_empty_answers_are_retried_with_a_new_seed(tmp_path: Path):
    backend = pfgen_fake(empty_first=frozenset({"質問02？"}), always_empty=frozenset({"質問03？"}))
    settings = GenerationSettings(model="fake", mode="completion", num_trials=2)
    report = generate_trials(backend, POOL, QUESTIONS, settings, cache=None)
    retried = [r for r in backend.generated if question_of(r) == "質問02？"]
    assert len(retried) == 4  # 2 trials x (first round + one retry)
    assert retried[0].seed != retried[-1].seed
    assert report.retried == 4  # 質問02 and 質問03 in both trials
    assert sorted(report.gave_up) == [(1, "質問03？"), (2, "質問03？")]
    answers = {(r["trial"], r["question"]): r["answer"] for r in report.rows}
    assert answers[(1, "質問02？")] != "" and answers[(1, "質問03？")] == ""
    assert sum(question_of(r) == "質問03？" for r in backend.generated) == 20


@pytest.mark.parametrize("mode", ["completion", "chat"])
def test_request_shape_per_mode(mode: str):
    backend = pfgen_fake()
    settings = GenerationSettings(model="fake", mode=mode, num_trials=1, temperature=0.0)  # type: ignore[arg-type]
    generate_trials(backend, POOL, QUESTIONS[:1], settings, cache=None)
    (request,) = backend.generated
    assert request.temperature == 0.0
    if mode == "completion":
        assert request.messages is None and request.prompt.endswith("Q: 質問01？\nA:")
        assert request.stop == ("Q:", "\n\n")
    else:
        assert request.messages is not None
        assert [m.role for m in request.messages] == ["system", "user"]
        assert request.messages[1].content == "Q: 質問01？"
