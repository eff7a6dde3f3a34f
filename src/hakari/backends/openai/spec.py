"""`openai:<model>@<base_url>[,<base_url>...]`: which model, on which servers, with which key.

The API key comes from the environment only (`HAKARI_API_KEY`, else `OPENAI_API_KEY`,
else none, which local vLLM servers accept). It is never part of a spec, a cache key,
results, samples or logs; `hakari._util.redact` scrubs it (and URL passwords, secret
query values, bearer tokens) from every message hakari shows, even one a server echoed
back.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from hakari._util.redact import KEY_VARIABLES, redact
from hakari.errors import ModelLoadError

PREFIX = "openai:"
NO_KEY = "EMPTY"  # what the openai client sends when the server needs no key
_SPEC = re.compile(r"^(?P<model>[^@\s]+(?:@[^@\s]+)*?)@(?P<urls>https?://\S+)$")


@dataclass(frozen=True)
class OpenAISpec:
    model: str
    base_urls: tuple[str, ...]


def parse_spec(spec: str) -> OpenAISpec:
    """`openai:<model>@<url>[,<url>...]` → model and replica URLs (validated, no
    trailing slash)."""
    body = spec[len(PREFIX) :] if spec.startswith(PREFIX) else spec
    match = _SPEC.match(body.strip())
    if match is None:
        raise ModelLoadError(
            f"{redact(spec)!r}: expected openai:<model>@<base url>[,<base url>...], "
            "e.g. openai:Qwen/Qwen2.5-7B-Instruct@http://localhost:8000/v1",
            field="model",
        )
    urls = tuple(u.strip().rstrip("/") for u in match["urls"].split(",") if u.strip())
    for url in urls:
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises for a port that is not a number in 0-65535
        except ValueError as exc:  # an unclosed [IPv6 host], a port such as :abc
            # only the host and port are shown: the URL may hold credentials
            host = url.split("://", 1)[-1].split("/", 1)[0].rpartition("@")[2]
            raise ModelLoadError(
                f"openai: the host and port {host!r} of a base URL are not usable ({exc})",
                field="--model",
            ) from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ModelLoadError(
                f"{redact(spec)!r}: {redact(url)!r} is not an http(s) URL", field="model"
            )
        if parts.username or parts.password:
            raise ModelLoadError(
                f"{redact(spec)!r}: put credentials in HAKARI_API_KEY, not in the URL",
                field="model",
            )
    if len(set(urls)) != len(urls):
        raise ModelLoadError(f"{redact(spec)!r}: a replica URL is listed twice", field="model")
    return OpenAISpec(model=match["model"], base_urls=urls)


def api_key() -> str | None:
    for name in KEY_VARIABLES:
        value = os.environ.get(name)
        if value:
            return value
    return None
