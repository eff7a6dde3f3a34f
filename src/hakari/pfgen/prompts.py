"""Prompts exactly as the reference builds them (upstream pfgen.py).

In trial t (counting from 1) every question sees the same order of the other 49 example
questions: sorted by `sha1(f"{seed}::{t}::{example question}")`; the first 20 are the
few-shot examples. The sampling seed of the trial is `int(sha1(f"{seed}::{t}"), 16) % 2**31`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from hakari.pfgen.data import Example

Mode = Literal["completion", "qa", "chat"]
MODES: tuple[Mode, ...] = ("completion", "qa", "chat")
MAX_TOKENS = 300
NUM_EXAMPLES = 20
INSTRUCTIONS: dict[str, str] = {
    "chat": "例と同様の文体及び文字数で、ユーザの質問に1行で答えてください。\n\n",
    "qa": "例と同様の文体及び文字数で、質問に1行で答えてください。\n\n",
    "completion": "",
}


def stop_sequences(mode: Mode) -> tuple[str, ...]:
    return ("Q:", "\n\n") if mode == "completion" else ("Q:",)


@dataclass(frozen=True)
class Prompt:
    """`text` for completion and qa (qa sends it as the one user message); `system` and
    `user` for chat."""

    mode: Mode
    text: str | None = None
    system: str | None = None
    user: str | None = None


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def sampling_seed(trial: int, seed: str = "") -> int:
    return int(_sha1(f"{seed}::{trial}"), 16) % (2**31)


def few_shot_examples(
    pool: list[Example], question: str, trial: int, num_examples: int = NUM_EXAMPLES, seed: str = ""
) -> list[Example]:
    others = [e for e in pool if e.question != question]
    others.sort(key=lambda e: _sha1(f"{seed}::{trial}::{e.question}"))
    return others[:num_examples]


def decode_prefix(prefix: str) -> str:
    """The reference reads --prefix with backslash escapes (e.g. `\\n`) interpreted."""
    return prefix.encode("utf-8").decode("unicode_escape").encode("latin1").decode("utf-8")


def build_prompt(
    pool: list[Example],
    question: str,
    mode: Mode,
    trial: int,
    *,
    num_examples: int = NUM_EXAMPLES,
    prefix: str = "",
    seed: str = "",
) -> Prompt:
    shots = "".join(
        f"Q: {e.question}\nA: {e.answer}\n\n"
        for e in few_shot_examples(pool, question, trial, num_examples, seed)
    )
    header = (INSTRUCTIONS[mode] + "## 回答例\n" + shots.strip()).strip()
    user = f"Q: {question}\n" + ("A:" if mode == "completion" else "")
    if mode == "chat":
        return Prompt(mode, system=prefix + header, user=user.strip())
    if mode == "qa":
        return Prompt(mode, text=prefix + header + "\n\n## 質問\n" + user.strip())
    if mode == "completion":
        return Prompt(mode, text=prefix + header + "\n\n" + user.strip())
    raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")


def postprocess(raw: str, mode: Mode) -> str:
    """The reference's clean-up: in qa/chat keep what follows the first "A:", then strip."""
    if mode in ("chat", "qa") and "A:" in raw:
        raw = raw.split("A:", 1)[1].strip()
    return raw.strip()
