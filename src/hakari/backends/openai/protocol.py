"""Request bodies and response parsing for the OpenAI-compatible endpoints.

Responses are read as plain JSON (not the client's pydantic models): a body that is not
JSON, or lacks a field hakari needs, raises `MalformedResponse` and is retried; engine
extensions (vLLM's `stop_reason`) are read where present. A choice without text (null or
missing) is a `Choice` with text None: the backend retries it and, if it persists,
counts a refusal (never an empty answer).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hakari.backends.base import GenerationRequest, Message
from hakari.backends.openai.faults import MalformedResponse


@dataclass(frozen=True)
class Choice:
    text: str | None  # None: the server gave no text (null or missing content)
    finish: str  # "stop", "length", ...
    n_tokens: int
    eos: bool = False  # the engine said it stopped at EOS (vLLM: stop_reason null)


def sampling_fields(request: GenerationRequest, stops: Sequence[str]) -> dict[str, Any]:
    """The generation settings, spelt as the OpenAI API (top_k as vLLM's extension)."""
    body: dict[str, Any] = {
        "max_tokens": request.max_new_tokens,
        "temperature": request.temperature,
    }
    if request.top_p != 1.0:
        body["top_p"] = request.top_p
    if request.seed is not None:
        body["seed"] = request.seed
    if stops:
        body["stop"] = list(stops)
    return body


def extra_fields(request: GenerationRequest, regex_field: str) -> dict[str, Any]:
    """Fields outside the OpenAI API: top_k, and the regex at `regex_field` (dotted:
    "structured_outputs.regex" → {"structured_outputs": {"regex": ...}})."""
    extra: dict[str, Any] = {}
    if request.top_k > 0:
        extra["top_k"] = request.top_k
    if request.regex is not None:
        *parents, leaf = regex_field.split(".")
        node = extra
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = request.regex
    return extra


def chat_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def render_messages(messages: Sequence[Message]) -> str:
    """What identifies a chat prompt in the cache: the messages as JSON (the server
    applies the model's chat template)."""
    return json.dumps(chat_messages(messages), ensure_ascii=False)


def load_body(content: bytes) -> dict[str, Any]:
    try:
        data = json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise MalformedResponse(f"not JSON: {str(e)[:80]}") from e
    if not isinstance(data, dict):
        raise MalformedResponse("not a JSON object")
    return data


def _choices(data: dict[str, Any], expected: int) -> list[dict[str, Any]]:
    choices = data.get("choices")
    if not isinstance(choices, list) or len(choices) != expected:
        raise MalformedResponse(f"expected {expected} choice(s), got {choices!r:.80}")
    if not all(isinstance(c, dict) for c in choices):
        raise MalformedResponse("a choice is not an object")
    if expected == 1:
        return choices
    # Several prompts: each answer must say which prompt it belongs to, exactly once.
    indices = [c.get("index") for c in choices]
    if sorted(i for i in indices if type(i) is int) != list(range(expected)):
        raise MalformedResponse(f"choice indices {indices!r:.80} are not 0..{expected - 1}")
    return sorted(choices, key=lambda c: int(c["index"]))


def _finish(choice: dict[str, Any]) -> tuple[str, bool]:
    finish = choice.get("finish_reason")
    if not isinstance(finish, str):
        raise MalformedResponse("choice without finish_reason")
    # vLLM says which stop ended the text: null is the model's EOS token, an integer one of
    # the other end tokens of its generation_config (Gemma's <end_of_turn>: hakari sends
    # no stop token ids), a string one of the request's stop strings.
    eos = (
        finish == "stop"
        and "stop_reason" in choice
        and (choice["stop_reason"] is None or type(choice["stop_reason"]) is int)
    )
    return finish, eos


def _usage_tokens(data: dict[str, Any], n_choices: int) -> int | None:
    usage = data.get("usage")
    if n_choices == 1 and isinstance(usage, dict):
        tokens = usage.get("completion_tokens")
        if isinstance(tokens, int):
            return tokens
    return None


def parse_completion(content: bytes, n_prompts: int) -> list[Choice]:
    """Choices of a /completions answer, in prompt order."""
    data = load_body(content)
    out = []
    for choice in _choices(data, n_prompts):
        text = choice.get("text")
        if text is not None and not isinstance(text, str):
            raise MalformedResponse("choice text is not text")
        finish, eos = _finish(choice)
        out.append(Choice(text, finish, 0, eos))
    tokens = _usage_tokens(data, n_prompts)
    if tokens is not None:
        out[0] = Choice(out[0].text, out[0].finish, tokens, out[0].eos)
    return out


def parse_chat(content: bytes) -> Choice:
    data = load_body(content)
    (choice,) = _choices(data, 1)
    message = choice.get("message")
    if not isinstance(message, dict):
        raise MalformedResponse("choice without message")
    text = message.get("content")  # None: a refusal, a tool call, a fault
    if text is not None and not isinstance(text, str):
        raise MalformedResponse("message content is not text")
    finish, eos = _finish(choice)
    return Choice(text, finish, _usage_tokens(data, 1) or 0, eos)


class NoLogprobs(Exception):
    """The server answered without the prompt log-probabilities asked for."""


def parse_echo_logprobs(content: bytes, continuation_chars: int) -> tuple[float, int]:
    """Sum log-prob and token count of the echoed prompt's last `continuation_chars`
    characters (the continuation), from a /completions answer with echo + logprobs.

    `text_offset` counts the characters of each token decoded on its own, so it is shifted
    by whatever the server prepends: the BOS token's text (`<|begin_of_text|>` adds 17 on
    vLLM), a SentencePiece leading space. The continuation is therefore found from the end
    of the prompt, whose offset is that of the first generated token."""
    data = load_body(content)
    (choice,) = _choices(data, 1)
    logprobs = choice.get("logprobs")
    if logprobs is None:
        raise NoLogprobs
    if not isinstance(logprobs, dict):
        raise MalformedResponse("logprobs is not an object")
    offsets = logprobs.get("text_offset")
    values = logprobs.get("token_logprobs")
    if not isinstance(offsets, list) or not isinstance(values, list):
        raise NoLogprobs
    if len(offsets) != len(values):
        raise MalformedResponse("text_offset and token_logprobs differ in length")
    if not all(type(offset) is int for offset in offsets):
        raise MalformedResponse("text_offset holds something that is not an integer")
    n_prompt = _echoed_prompt_tokens(data, len(offsets))
    prompt_end = _prompt_end(logprobs, offsets, n_prompt)
    start = prompt_end - continuation_chars
    total, n = 0.0, 0
    for position in range(n_prompt):
        if not start <= offsets[position] < prompt_end:
            continue
        value = values[position]
        if value is None and position == 0:
            raise NoFirstTokenLogprob
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise MalformedResponse(f"no log-prob for the continuation token at {position}")
        total += float(value)
        n += 1
    if n == 0 and continuation_chars > 0:
        raise MalformedResponse("no echoed token inside the continuation")
    return total, n


class NoFirstTokenLogprob(Exception):
    """The continuation starts the prompt and the model adds no BOS token, so its first
    token has no log-prob (nothing comes before it)."""


def _echoed_prompt_tokens(data: dict[str, Any], n_entries: int) -> int:
    """How many of the echoed entries are the prompt's: `usage.prompt_tokens` where the
    server reports it, else all but the one token generated (`max_tokens=1`)."""
    usage = data.get("usage")
    reported = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if type(reported) is int and 1 <= reported <= n_entries:
        return reported
    if n_entries < 2:
        raise MalformedResponse("echo returned no prompt tokens")
    return n_entries - 1


def _prompt_end(logprobs: dict[str, Any], offsets: list[int], n_prompt: int) -> int:
    """The offset where the echoed prompt ends: that of the first generated token, or the
    last prompt token's offset plus its text when nothing follows it."""
    if n_prompt < len(offsets):
        return offsets[n_prompt]
    tokens = logprobs.get("tokens")
    if not isinstance(tokens, list) or len(tokens) != len(offsets):
        raise MalformedResponse("echo without the generated token or the tokens' text")
    last = tokens[n_prompt - 1]
    if not isinstance(last, str):
        raise MalformedResponse("a token's text is not a string")
    return offsets[n_prompt - 1] + len(last)
