"""The one redaction filter: no credential in anything hakari prints or writes.

Two strengths, for two kinds of text:

* `redact(text)`, for text hakari composes (error lines, log lines, the recorded command,
  model specs, results.json, report files): the password of a URL
  (`http://user:***@host`), the value of a secret query parameter (`?api_key=***`,
  `&token=***`, `&key=***`...), bearer and basic tokens (`Bearer ***`), and the exact
  values of the key variables (`SECRET_VARIABLES`);
* `redact_keys(text)`, for model output (samples.jsonl, the response cache): only the key
  variables' exact values, counted. Output is measured data: a model that writes a URL
  with a password or the words "Bearer abc" keeps them, but a server that reflects the
  Authorization header into its completion does not leak the key.

The one decision: a key is redacted only when it is a credential, i.e. at least
`MIN_KEY_LENGTH` characters; then every occurrence goes, and so does every piece of it of
that length (a reflected key cut by the answer's character budget is still a secret). A
shorter value (`-`, `EMPTY`, the placeholders local servers accept) is no secret, and
starring every `-` would make the recorded command unreadable. Real API keys are 20 or
more characters.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, TextIO

from hakari._util.regex import compile_regex

# The variables whose values are credentials: the OpenAI-compatible client's key (hakari's
# own name first) and the Hugging Face token.
KEY_VARIABLES = ("HAKARI_API_KEY", "OPENAI_API_KEY")
SECRET_VARIABLES = (*KEY_VARIABLES, "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
MIN_KEY_LENGTH = 8
MASK = "***"

_SECRET_PARAMS = (
    "api[_-]?key|apikey|key|token|access[_-]?token|refresh[_-]?token|id[_-]?token|auth"
    "|password|passwd|pwd|secret|client[_-]?secret|sig|signature|x-api-key"
)
_TOKEN_CHARS = r"A-Za-z0-9\-._~+/"  # RFC 6750 b64token
# Linear-time patterns (the text may be a server's error body): the userinfo of a URL
# (no "/", "?" or "#" before its "@", RFC 3986); a secret query parameter's value; a
# bearer token: one with a digit or a symbol in it, or 8 letters or more ("the bearer
# of the ring" stays).
_URL_USERINFO = compile_regex(r"(?i)[a-z][a-z0-9+.\-]*://[^\s@/?#]+@")
_QUERY_SECRET = compile_regex(rf"(?i)[?&;](?:{_SECRET_PARAMS})=[^&#\s\"'<>:,;)]+")
_AUTH_TOKEN = compile_regex(
    rf"(?i)bearer\s+(?:[{_TOKEN_CHARS}]*[0-9\-._~+/][{_TOKEN_CHARS}]*|[A-Za-z]{{8,}})=*"
)


def configured_keys() -> list[str]:
    """The credential values of the environment, longest first (one that contains
    another is redacted whole)."""
    values = {os.environ.get(name) or "" for name in SECRET_VARIABLES}
    return sorted((v for v in values if len(v) >= MIN_KEY_LENGTH), key=len, reverse=True)


def redact_keys(text: str) -> tuple[str, int]:
    """`text` with every configured key, and every piece of one at least
    `MIN_KEY_LENGTH` characters long (an answer cut by its budget holds a prefix),
    replaced by `***`; and how many were replaced."""
    spans = sorted(span for key in configured_keys() for span in _key_pieces(text, key))
    if not spans:
        return text, 0
    merged = [list(spans[0])]
    for start, end in spans[1:]:
        if start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    pieces, done = [], 0
    for start, end in merged:
        pieces += [text[done:start], MASK]
        done = end
    return "".join(pieces) + text[done:], len(merged)


def _key_pieces(text: str, key: str) -> list[tuple[int, int]]:
    """The spans of `text` that spell `MIN_KEY_LENGTH` or more consecutive characters of
    `key`: each window of the key found, grown while text and key go on agreeing."""
    spans = []
    for offset in range(len(key) - MIN_KEY_LENGTH + 1):
        window = key[offset : offset + MIN_KEY_LENGTH]
        start = text.find(window)
        while start >= 0:
            end, k = start + MIN_KEY_LENGTH, offset + MIN_KEY_LENGTH
            while end < len(text) and k < len(key) and text[end] == key[k]:
                end, k = end + 1, k + 1
            spans.append((start, end))
            start = text.find(window, start + 1)
    return spans


def redact(text: str) -> str:
    """`text` without URL passwords, secret query values, bearer tokens or keys."""
    text, _ = redact_keys(text)
    if "://" in text:
        text = _URL_USERINFO.sub(_mask_userinfo, text)
    if "=" in text:
        text = _QUERY_SECRET.sub(_mask_value, text)
    return _AUTH_TOKEN.sub(_mask_token, text)


def _mask_userinfo(matched: str) -> str:
    scheme, _, _ = matched.partition("://")
    return f"{scheme}://{MASK}@"


def _mask_value(matched: str) -> str:
    name, _, _ = matched.partition("=")
    return f"{name}={MASK}"


def _mask_token(matched: str) -> str:
    return f"{matched.split(maxsplit=1)[0]} {MASK}"


_SECRET_NAME = compile_regex(rf"(?i)^(?:[a-z0-9]+[_-])*(?:{_SECRET_PARAMS})$")


def is_secret_name(name: str) -> bool:
    """Whether an argument's name says its value is a credential (`api_key`, `token`,
    `hf_token`, `password`, `OPENAI_API_KEY`...): the names of `_SECRET_PARAMS`, with any
    prefix."""
    return bool(_SECRET_NAME.fullmatch(name.strip()))


def redact_arguments(value: Any) -> Any:
    """Recorded arguments of another tool (lm-eval's `model_args` "k=v,k2=v2", an inspect
    log's `model_args` mapping) with the value of every argument named like a credential
    replaced by `***`, then `redact_tree` on the rest."""
    if isinstance(value, str):
        parts = []
        for part in value.split(","):
            name, sep, _ = part.partition("=")
            parts.append(f"{name}={MASK}" if sep and is_secret_name(name) else part)
        return redact(",".join(parts))
    if isinstance(value, dict):
        return {
            k: MASK if isinstance(k, str) and is_secret_name(k) else redact_arguments(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_arguments(v) for v in value]
    return redact_tree(value)


def redact_tree(data: Any) -> Any:
    """A JSON-like value with `redact` applied to every string in it, keys included (model
    specs key results.json)."""
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {
            redact(str(k)) if isinstance(k, str) else k: redact_tree(v) for k, v in data.items()
        }
    if isinstance(data, list | tuple):
        return [redact_tree(v) for v in data]
    return data


class RedactingStream:
    """A text stream that writes through `redact` (what a command prints: rich consoles,
    print, log records); everything else is the wrapped stream's."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(redact(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
