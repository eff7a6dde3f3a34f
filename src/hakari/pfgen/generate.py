"""Generating pfgen-bench answers with a hakari backend, as the reference does.

Each trial t = 1..N asks all 50 questions with the trial's few-shot examples and the
trial's sampling seed. An empty answer is asked again, up to 10 rounds, as upstream
`pfgen.py` does; unlike upstream (whose HF runner draws from the global RNG, so a retry
differs) a seeded backend would answer a retry identically, so round r > 0 uses the seed
`sha1(f"{seed}::{t}::retry{r}")`. Every answer goes through hakari's response cache: the
same command run again generates only what is missing.

Output: `config.json` (the reference's parameters; the folder name is the first 7 hex
digits of its SHA-1, as upstream) and `trials.jsonl.xz`, byte-sorted lines of
`{"question", "answer", "timestamp", "trial"}`.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import lzma
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hakari._util import checks
from hakari._util.atomic import write_bytes_atomic, write_text_atomic
from hakari.backends.base import Backend, GenerationRequest, Message
from hakari.backends.cache import ResponseCache, cached_generate
from hakari.errors import HakariInputError
from hakari.pfgen.data import Example
from hakari.pfgen.prompts import (
    MAX_TOKENS,
    MODES,
    NUM_EXAMPLES,
    Mode,
    build_prompt,
    decode_prefix,
    postprocess,
    sampling_seed,
    stop_sequences,
)

MAX_ROUNDS = 10
DEFAULT_TEMPERATURE = 1.0
DEFAULT_TOP_P = 0.98
DEFAULT_TOP_K = 0  # disabled, as vLLM and later upstream runs (top_k=None)
DEFAULT_TRIALS = 100


@dataclass(frozen=True)
class GenerationSettings:
    model: str
    mode: Mode = "completion"
    num_trials: int = DEFAULT_TRIALS
    temperature: float = DEFAULT_TEMPERATURE
    top_p: float = DEFAULT_TOP_P
    top_k: int = DEFAULT_TOP_K
    num_examples: int = NUM_EXAMPLES
    prefix: str = ""
    seed: str = ""
    engine: str = "hakari"

    def check(self) -> None:
        """Every setting in range, before any file is read or any model loads."""
        checks.choice(self.mode, "--mode", MODES)
        checks.integer(self.num_trials, "--num-trials", low=1)
        checks.number(self.temperature, "--temperature", low=0.0)
        if self.model.startswith("vllm:"):  # vLLM's SamplingParams refuses more
            checks.number(self.temperature, "--temperature", low=0.0, high=2.0)
        checks.number(self.top_p, "--top-p", low=0.0, high=1.0, low_open=True)
        checks.integer(self.top_k, "--top-k", low=0)  # 0 disables top-k
        checks.integer(self.num_examples, "--num-examples", low=0)

    def check_data(self, pool: Sequence[Example], questions: Sequence[str]) -> None:
        """`--num-examples` against the example pool, and the requests of all trials (held
        in memory at once) against the memory available."""
        # a question's own example is never shown
        most = min((sum(e.question != q for e in pool) for q in questions), default=len(pool))
        if self.num_examples > most:
            raise HakariInputError(
                f"{self.num_examples} is more than the {most} few-shot examples a prompt can "
                f"have: the examples file holds {len(pool)}, a question's own is left out",
                field="--num-examples",
            )
        if questions:
            request = make_request(list(pool), questions[0], 1, 0, self, decode_prefix(self.prefix))
            chars = len(request.prompt) + sum(len(m.content) for m in request.messages or ())
            # up to 4 bytes a character, held twice (the request and the rendered prompt
            # of its cache key), plus the objects around them
            per_request = 8 * chars + 1024
            checks.fits_in_memory(
                self.num_trials * len(questions) * per_request,
                "--num-trials",
                self.num_trials,
                "the requests of every trial",
            )

    def config(self) -> dict[str, Any]:
        """The reference's config.json parameters (its folder name hashes this)."""
        params: dict[str, Any] = {
            "engine": self.engine,
            "max_tokens": MAX_TOKENS,
            "mode": self.mode,
            "model": self.model,
            "num_examples": self.num_examples,
            "stop": list(stop_sequences(self.mode)),
            "temperature": self.temperature,
            "top_p": self.top_p,
        }
        if self.top_k:
            params["top_k"] = self.top_k
        if self.prefix:
            params["prefix"] = self.prefix
        return dict(sorted(params.items()))


def config_json(settings: GenerationSettings) -> str:
    return json.dumps(settings.config(), ensure_ascii=False)


def config_hash(settings: GenerationSettings) -> str:
    return hashlib.sha1(config_json(settings).encode("utf-8")).hexdigest()[:7]


def retry_seed(trial: int, round_index: int, seed: str = "") -> int:
    if round_index == 0:
        return sampling_seed(trial, seed)
    text = f"{seed}::{trial}::retry{round_index}"
    return int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16) % (2**31)


def make_request(
    pool: list[Example],
    question: str,
    trial: int,
    round_index: int,
    settings: GenerationSettings,
    prefix: str,
) -> GenerationRequest:
    prompt = build_prompt(
        pool,
        question,
        settings.mode,
        trial,
        num_examples=settings.num_examples,
        prefix=prefix,
        seed=settings.seed,
    )
    common: dict[str, Any] = {
        "max_new_tokens": MAX_TOKENS,
        "stop": stop_sequences(settings.mode),
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "top_k": settings.top_k,
        "seed": retry_seed(trial, round_index, settings.seed),
    }
    if settings.mode == "completion":
        assert prompt.text is not None
        return GenerationRequest(prompt=prompt.text, **common)
    if settings.mode == "qa":
        assert prompt.text is not None
        messages: tuple[Message, ...] = (Message("user", prompt.text),)
    else:
        assert prompt.system is not None and prompt.user is not None
        messages = (Message("system", prompt.system), Message("user", prompt.user))
    return GenerationRequest(prompt="", messages=messages, **common)


@dataclass
class _ProgressCounter:
    base: int
    total: int
    callback: Callable[[int, int], None] | None
    seen: int = 0

    def add(self, n: int) -> None:
        self.seen += n
        if self.callback is not None:
            self.callback(min(self.base + self.seen, self.total), self.total)


@dataclass
class GenerationReport:
    rows: list[dict[str, Any]] = field(default_factory=list)
    generated: int = 0  # requests sent to the backend now (not answered from cache)
    retried: int = 0  # (trial, question) pairs that needed more than one round
    gave_up: list[tuple[int, str]] = field(default_factory=list)  # still empty after 10


def generate_trials(
    backend: Backend,
    pool: list[Example],
    questions: list[str],
    settings: GenerationSettings,
    *,
    cache: ResponseCache | None,
    batch_size: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> GenerationReport:
    """Answer every question in every trial; `on_progress(done, total)`."""
    settings.check()
    settings.check_data(pool, questions)
    checks.optional_integer(batch_size, "--batch-size", low=1)
    prefix = decode_prefix(settings.prefix)
    report = GenerationReport()
    pending = [(t, q) for t in range(1, settings.num_trials + 1) for q in questions]
    total = len(pending)
    answers: dict[tuple[int, str], str] = {}
    for round_index in range(MAX_ROUNDS):
        if not pending:
            break
        if round_index == 1:
            report.retried = len(pending)
        requests = [make_request(pool, q, t, round_index, settings, prefix) for t, q in pending]
        counter = _ProgressCounter(len(answers), total, on_progress)
        results, generated = cached_generate(
            backend, requests, cache, batch_size=batch_size, on_progress=counter.add
        )
        report.generated += generated
        still_empty = []
        for (trial, question), result in zip(pending, results, strict=True):
            if result.text == "":
                still_empty.append((trial, question))
                continue
            answers[(trial, question)] = postprocess(result.text, settings.mode)
        pending = still_empty
    report.gave_up = pending
    for key in pending:
        answers[key] = ""
    now = datetime.datetime.now
    report.rows = [
        {"question": q, "answer": answers[(t, q)], "timestamp": now().isoformat(), "trial": t}
        for t in range(1, settings.num_trials + 1)
        for q in questions
    ]
    if on_progress is not None:
        on_progress(total, total)
    return report


def trials_lines(rows: list[dict[str, Any]]) -> bytes:
    """JSON lines, byte-sorted like upstream's `LC_ALL=C sort`."""
    lines = sorted(json.dumps(r, ensure_ascii=False).encode("utf-8") for r in rows)
    return b"".join(line + b"\n" for line in lines)


def write_run(directory: Path, settings: GenerationSettings, rows: list[dict[str, Any]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_text_atomic(directory / "config.json", config_json(settings) + "\n")
    path = directory / "trials.jsonl.xz"
    write_bytes_atomic(path, lzma.compress(trials_lines(rows)))
    return path
