"""Which server failures are retried, how long to wait, and the one-line messages for
the ones that are not.

Retried (with exponential backoff and full jitter, capped in attempts and total time):
429 (waiting at least what `Retry-After` / `retry-after-ms` asks), 408, 409, every 5xx,
timeouts (a stalled response included: the read timeout is `request_timeout`), broken
or reset connections, and bodies that are not JSON or lack their fields.
Not retried: other 4xx. 400/401/403/404/422 say what is wrong (key, URL, model, a field
the server does not know) in one line; the CLI exits with code 2.

The openai client's own retries are off (`max_retries=0`) so that one policy, with a
cap on total time and replica failover, decides every retry.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import openai

from hakari.errors import HakariInputError

RETRY_STATUS = frozenset({408, 409, 429})


class MalformedResponse(Exception):
    """A 2xx answer that is not JSON or lacks a field: retried like a 5xx."""


class NoContent(MalformedResponse):
    """A 2xx answer with no text for some of its prompts (`"content": null`, a missing
    `text`): retried like any malformed answer, but it says nothing about the replica's
    health (it is not counted against it). When the retries run out, `settled` (the
    request's results, the prompts without text as refusals) stands as the answer, so a
    prompt the server will not answer is a counted refusal, not a failed run."""

    def __init__(self, n_missing: int, settled: object) -> None:
        super().__init__(f"{n_missing} answer(s) without text")
        self.settled = settled


class ServerError(HakariInputError):
    """A server failure that no retry can fix, or retries that ran out: one line, exit 2."""


@dataclass(frozen=True)
class Fault:
    """A retryable failure: what happened and how long the server asked us to wait."""

    reason: str
    retry_after: float = 0.0


def classify(exc: BaseException) -> Fault | None:
    """A `Fault` for a retryable failure, None for one that is not (the caller turns it
    into a `ServerError`)."""
    if isinstance(exc, MalformedResponse):
        return Fault(f"malformed response ({exc})")
    if isinstance(exc, json.JSONDecodeError):
        return Fault(f"response is not JSON ({exc.msg})")
    if isinstance(exc, openai.APITimeoutError):
        return Fault("timed out")
    if isinstance(exc, openai.APIConnectionError):
        return Fault(f"connection failed ({_cause(exc)})")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status in RETRY_STATUS or status >= 500:
            return Fault(f"HTTP {status}", retry_after=retry_after_seconds(exc))
    return None


def _cause(exc: BaseException) -> str:
    inner = exc.__cause__ or exc.__context__
    return type(inner).__name__ if inner is not None else type(exc).__name__


def retry_after_seconds(exc: openai.APIStatusError) -> float:
    """What the server asked for: `retry-after-ms`, else `Retry-After` in seconds
    (an HTTP date is read as 'soon': 1 s)."""
    headers = exc.response.headers
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            return 1.0
    return 0.0


def backoff(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Full-jitter exponential backoff before retry number `attempt` (1, 2, ...)."""
    return rng.uniform(0.0, min(cap, base * 2 ** (attempt - 1)))


def fatal_message(exc: BaseException, *, url: str, model: str, regex_field: str) -> str:
    """One line saying why a request cannot succeed, for a failure `classify` rejected."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = server_detail(exc)
        if status in (400, 404) and _chat_only(exc, detail):
            return (
                f"{url}: model {model!r} takes chat requests only (the server refused a "
                f"text completion, {status}: {detail}); add --prompt-format chat (under auto, "
                "a task whose file says `prompt_format: completion`, as every jaster set's "
                "does, goes to /completions)"
            )
        if status == 401:
            return (
                f"{url}: the server refused the API key (401: {detail}); set HAKARI_API_KEY "
                "or OPENAI_API_KEY"
            )
        if status == 403:
            return f"{url}: access denied (403: {detail}); check the API key's permissions"
        if status == 404:
            return (
                f"{url}: not found (404: {detail}); check the base URL (it usually ends in /v1) "
                f"and that the server serves model {model!r}"
            )
        top = regex_field.split(".")[0]
        if status in (400, 422) and (top in detail or "regex" in detail):
            return (
                f"{url}: this server cannot apply regex constraints (it rejected the "
                f"{top!r} field: {detail}); use --decoding greedy or loglik, a vLLM server, or "
                "--regex-field for servers that spell it otherwise (SGLang: regex)"
            )
        return f"{url}: the server rejected the request ({status}: {detail})"
    return f"{url}: {type(exc).__name__}: {exc}"


def _chat_only(exc: openai.APIStatusError, detail: str) -> bool:
    """A text-completion request refused because the model is a chat model (OpenAI's
    404 "This is a chat model and not supported in the v1/completions endpoint")."""
    path = exc.response.request.url.path
    completion = path.endswith("/completions") and not path.endswith("/chat/completions")
    return completion and "chat" in detail.lower()


def server_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            msg = inner.get("message") or inner.get("detail")
            if msg:
                return " ".join(str(msg).split())[:300]
        detail = body.get("detail")
        if detail:
            return " ".join(str(detail).split())[:300]
    return " ".join(str(exc.message).split())[:300]
