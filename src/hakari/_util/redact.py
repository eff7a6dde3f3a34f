"""The one redaction filter: no credential in anything hakari prints or writes.

Two strengths, for two kinds of text:

* `redact(text)`, for text hakari composes (error lines, log lines, the recorded command,
  model specs, results.json, report files, exports): the password of a URL
  (`http://user:***@host`), the value of a secret query parameter (`?api_key=***`,
  `&token=***`, `&key=***`...), bearer and basic tokens (`Bearer ***`, `Basic ***`), the
  value of an `Authorization:` header, values shaped like a provider's credential
  whatever their name (`hf_…`, `sk-…`, `ghp_…`, `AKIA…`, a JWT: `TOKEN_SHAPES`), and the
  exact values of the key variables (`SECRET_VARIABLES`);
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

import base64
import binascii
import json
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
# Argument names that hold credentials beyond the query parameters (camelCase is folded
# to snake case before matching: `hfToken`); the plurals of lists of them (`api_keys`, not
# `max_tokens`, a count).
_SECRET_ARGUMENTS = (
    f"{_SECRET_PARAMS}|credentials?|authorization|cookies?|passphrase|private[_-]?key"
    "|keys|secrets|passwords"
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
# Basic credentials are base64 of "user:password": masked when they decode so.
_BASIC_TOKEN = compile_regex(r"(?i)basic\s+[A-Za-z0-9+/]{4,}={0,2}")
# An Authorization header's value, whatever its scheme (`Token …`, `Digest …`, `Basic …`).
_AUTH_HEADER = compile_regex(
    r"(?i)(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?[^\s,\"'}]+(?:[ \t]+[^\s,\"'}]+)?"
)
# Credentials recognised by their shape, whatever the argument is called: Hugging Face,
# OpenAI / Anthropic, GitHub, Slack, AWS and Google keys, and JSON web tokens.
TOKEN_SHAPES = (
    r"hf_[A-Za-z0-9]{30,}",
    r"sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_\-]{20,}",
    r"gh[pousr]_[A-Za-z0-9]{30,}",
    r"github_pat_[A-Za-z0-9_]{30,}",
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",
    r"AKIA[0-9A-Z]{16}",
    r"AIza[0-9A-Za-z_\-]{35}",
    r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
)
_SHAPED_TOKEN = compile_regex(r"(?:" + "|".join(TOKEN_SHAPES) + r")")


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
    text = _SHAPED_TOKEN.sub(lambda _: MASK, text)
    text = _AUTH_HEADER.sub(_mask_header, text)
    text = _BASIC_TOKEN.sub(_mask_basic, text)
    return _AUTH_TOKEN.sub(_mask_token, text)


def _mask_userinfo(matched: str) -> str:
    scheme, _, _ = matched.partition("://")
    return f"{scheme}://{MASK}@"


def _mask_value(matched: str) -> str:
    name, _, _ = matched.partition("=")
    return f"{name}={MASK}"


def _mask_token(matched: str) -> str:
    return f"{matched.split(maxsplit=1)[0]} {MASK}"


def _mask_header(matched: str) -> str:
    """`Authorization: Scheme ***` (the scheme kept when the value has one)."""
    cut = next(k for k, c in enumerate(matched) if c in ":=") + 1
    while cut < len(matched) and matched[cut] in " \t\"'":
        cut += 1
    words = matched[cut:].split()
    return matched[:cut] + (f"{words[0]} {MASK}" if len(words) == 2 else MASK)


def _mask_basic(matched: str) -> str:
    scheme, token = matched.split(maxsplit=1)
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return matched
    return f"{scheme} {MASK}" if b":" in decoded else matched


_SECRET_NAME = compile_regex(rf"(?i)^(?:[a-z0-9]+[_-])*(?:{_SECRET_ARGUMENTS})$")
_CAMEL_HUMP = compile_regex(r"[a-z0-9][A-Z]")


def is_secret_name(name: str) -> bool:
    """Whether an argument's name says its value is a credential (`api_key`, `token`,
    `hf_token`, `password`, `OPENAI_API_KEY`, `hfToken`, `api_keys`, `credentials`,
    `Authorization`...): the names of `_SECRET_ARGUMENTS`, with any prefix, in snake or
    camel case, singular or plural."""
    snake = _CAMEL_HUMP.sub(lambda hump: f"{hump[0]}_{hump[1]}", name.strip())
    return bool(_SECRET_NAME.fullmatch(snake))


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


def redact_recorded(value: Any) -> str:
    """A recorded argument set as one line of text, `redact_arguments` applied: a mapping
    or list (as sorted JSON), a "k=v,k2=v2" string, or the JSON text of a mapping or list
    (what results.json keeps in a model's `identity`)."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            value = json.loads(value)
        except ValueError:
            pass
    shown = redact_arguments(value)
    return shown if isinstance(shown, str) else json.dumps(shown, sort_keys=True, default=str)


def redact_identity(identity: dict[str, Any]) -> dict[str, str]:
    """A model's identity (results.json's `identity`, an export's model details) with
    every value through `redact_recorded` and a value under a secret name masked: what
    every writer of an identity writes."""
    return {
        str(k): MASK if is_secret_name(str(k)) else redact_recorded(v) for k, v in identity.items()
    }


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
