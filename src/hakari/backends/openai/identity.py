"""Before a server's first prompt: every replica answers `/models` and serves the model,
and the model's identity gets a revision from what the servers report about it (a hash of
its `/models` entry, never the URL: replicas and a restarted server share one cache)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

import openai

from hakari._util.redact import redact
from hakari.backends.openai.faults import classify
from hakari.backends.openai.pool import Replica
from hakari.errors import ModelLoadError

log = logging.getLogger(__name__)
# Fields of a /models entry that change between calls or servers without changing the model.
_VOLATILE_MODEL_FIELDS = {"created", "object", "permission", "root", "parent"}

Client = openai.AsyncOpenAI
DescribeFatal = Callable[[BaseException, Replica[Client]], str]


async def server_revision(
    replicas: Sequence[Replica[Client]],
    model: str,
    *,
    timeout: float,
    describe_fatal: DescribeFatal,
) -> str:
    """GET /models on every replica: fails at once on a wrong URL, a refused
    connection, a missing or wrong key, or a model the server does not serve.
    Returns the identity's revision: a hash of what the servers report."""
    cards = await asyncio.gather(
        *(model_card(r, model, timeout=timeout, describe_fatal=describe_fatal) for r in replicas)
    )
    known = [c for c in cards if c is not None]
    if not known:
        return ""
    first = known[0]
    for card, replica in zip(cards, replicas, strict=True):
        if card is not None and card != first:
            log.warning(
                "replica %s reports model %s differently (%s vs %s)",
                replica.url,
                model,
                card,
                first,
            )
    blob = json.dumps(first, sort_keys=True)
    return "server-" + hashlib.sha256(blob.encode()).hexdigest()[:16]


async def model_card(
    replica: Replica[Client], model: str, *, timeout: float, describe_fatal: DescribeFatal
) -> dict[str, Any] | None:
    """The replica's `/models` entry of `model` without its volatile fields (None: the
    server lists nothing), retried on timeouts and retryable statuses."""
    last: BaseException | None = None
    for attempt in range(3):
        try:
            raw = await replica.client.models.with_raw_response.list(timeout=min(timeout, 30.0))
            data = json.loads(raw.http_response.content)
            break
        except openai.APIConnectionError as exc:
            if isinstance(exc, openai.APITimeoutError) and attempt < 2:
                last = exc
                continue
            raise ModelLoadError(
                redact(
                    f"cannot reach {replica.url}: {exc.__cause__ or exc} (is the server "
                    "running, and is the URL right?)"
                ),
                field="model",
            ) from None
        except openai.APIStatusError as exc:
            if classify(exc) is not None and attempt < 2:
                last = exc
                await asyncio.sleep(0.5 * 2**attempt)
                continue
            raise ModelLoadError(redact(describe_fatal(exc, replica))) from None
        except ValueError as exc:  # not JSON
            last = exc
    else:
        raise ModelLoadError(
            redact(f"{replica.url}: /models keeps failing ({last})"), field="model"
        )
    return _entry_of(data, model, replica.url)


def _entry_of(data: Any, model: str, url: str) -> dict[str, Any] | None:
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        return None  # a server that lists nothing (transformers serve with a pinned model)
    ids = [e.get("id") for e in entries if isinstance(e, dict)]
    for entry in entries:
        if isinstance(entry, dict) and entry.get("id") == model:
            return {k: v for k, v in entry.items() if k not in _VOLATILE_MODEL_FIELDS}
    raise ModelLoadError(
        f"{url} does not serve model {model!r}; it serves: " + ", ".join(str(i) for i in ids[:20]),
        field="model",
    )
