"""The response cache: every generation and log-likelihood result, in SQLite (WAL).

Keys hash the backend, the model identity (name + revision/file hash + dtype), the exact
text the model sees and every decoding setting (the regex included), so a cached answer
is reused only where the model would have produced the same one. Results are written
as the backend hands them on, each as it ends (those that ended together, e.g. in one
decode step, in one transaction: WAL without an fsync a commit, ~55 µs): a killed run
loses only the answers still being computed, and the same command run again generates
only what is missing. An interrupt (Ctrl-C) that lands between a write and its commit
leaves the transaction open; `close` commits it.

Answers are untrusted text, and the cache must never be what stops a run: an answer
holding a character UTF-8 cannot encode (a lone surrogate, from a server's JSON
"\\ud800") is stored exactly, as its JSON escape (keys hash such text too), and a row
that cannot be read back (bad JSON, a field of the wrong type) is a cache miss: generated
again, stored over the bad row and counted (`ResponseCache.unreadable`).

Generated text is stored without the configured API keys (`without_keys`): a server
that reflects its Authorization header into the answer leaves *** here and in
samples.jsonl, and each result counts what was replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TypeVar, get_args, get_type_hints

import platformdirs

from hakari._util.atomic import check_output_folder
from hakari._util.redact import redact_keys
from hakari._util.unicode import escaped
from hakari.backends.base import (
    Backend,
    GenerationRequest,
    GenerationResult,
    LoglikRequest,
    LoglikResult,
    ModelIdentity,
)
from hakari.errors import CacheError

R = TypeVar("R")

# Concurrent runs share one cache: a writer waits this long for another's batch to commit.
BUSY_TIMEOUT_S = 60.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    created REAL NOT NULL DEFAULT (julianday('now'))
)
"""


def default_cache_dir() -> Path:
    env = os.environ.get("HAKARI_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("hakari"))


def checked_cache_dir(cache_dir: Path | None) -> Path:
    """The cache folder (`cache_dir`, else $HAKARI_CACHE_DIR, else the user cache), refused
    with one line naming where it came from when it is not a folder that can be written."""
    path = cache_dir or default_cache_dir()
    if cache_dir is not None:
        source = "--cache-dir"
    elif os.environ.get("HAKARI_CACHE_DIR"):
        source = "HAKARI_CACHE_DIR"
    else:
        source = "the user cache folder"
    return check_output_folder(path, source)


def request_key(kind: str, identity: ModelIdentity, rendered_prompt: str, settings: dict) -> str:
    """A stable hash of everything that determines a model's answer."""
    blob = json.dumps(
        {
            "kind": kind,
            "model": asdict(identity),
            "prompt": rendered_prompt,
            "settings": settings,
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    # surrogatepass: text UTF-8 cannot encode still gets a key (valid text: the same bytes)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    """A key -> result store. Thread-safe for one process; WAL lets readers run alongside.

    A damaged, read-only or locked database raises `CacheError` (one line that says how to
    recover: `--no-cache` or another `--cache-dir`): on open, where a write is tried at
    once so that a read-only cache is found before any model loads, and on every later
    read and write.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.unreadable = 0  # rows read back that were not valid (each one a cache miss)
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_S
            )
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(str(path), str(exc)) from exc
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(SCHEMA)
            # A write that is rolled back proves the file is a readable, writable database
            # now, before any model loads.
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute("SELECT key FROM responses LIMIT 1").fetchall()
                self._conn.execute(
                    "INSERT OR REPLACE INTO responses (key, kind, payload) VALUES ('', '', '')"
                )
            finally:
                self._conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            self._conn.close()
            raise CacheError(str(path), str(exc)) from exc

    @classmethod
    def in_dir(cls, cache_dir: Path | None) -> ResponseCache:
        return cls((cache_dir or default_cache_dir()) / "responses.sqlite3")

    def get_many(self, keys: Sequence[str]) -> dict[str, dict]:
        """The stored payloads of `keys` that are there; a row that is not a JSON object
        comes back as {} (a payload without a result: its reader counts it in
        `unreadable` and generates it again)."""
        found: dict[str, dict] = {}
        with self._lock, self._errors():
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, payload FROM responses WHERE key IN ({marks})", chunk
                )
                for key, payload in rows:
                    try:
                        value = json.loads(payload)
                    except (TypeError, ValueError):  # not text, or not JSON
                        value = None
                    found[key] = value if isinstance(value, dict) else {}
        return found

    def misread(self, n: int = 1) -> None:
        """Count rows that hold no valid result (see `unreadable`)."""
        with self._lock:
            self.unreadable += n

    def put_many(self, kind: str, items: Iterable[tuple[str, dict]]) -> None:
        rows = [(k, kind, escaped(json.dumps(p, ensure_ascii=False))) for k, p in items]
        if not rows:
            return
        with self._lock, self._errors():
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO responses (key, kind, payload) VALUES (?, ?, ?)", rows
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def count(self) -> int:
        with self._lock, self._errors():
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn.in_transaction:  # whole rows an interrupt kept from their COMMIT
                with self._errors():
                    self._conn.execute("COMMIT")
            self._conn.close()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise CacheError(str(self.path), str(exc)) from exc


def generation_to_payload(result: GenerationResult) -> dict:
    return asdict(result)


FINISH_REASONS = frozenset(get_args(get_type_hints(GenerationResult)["finish_reason"]))


def generation_from_payload(payload: dict) -> GenerationResult | None:
    """The cached result, or None when the row does not hold one (a miss)."""
    text, n_tokens = payload.get("text"), payload.get("n_tokens")
    reason, redactions = payload.get("finish_reason"), payload.get("redactions", 0)
    if (
        not isinstance(text, str)
        or not _count(n_tokens)
        or not isinstance(reason, str)
        or reason not in FINISH_REASONS
        or not _count(redactions)
    ):
        return None
    return GenerationResult(
        text=text,
        n_tokens=n_tokens,  # type: ignore[arg-type]  # an int: _count checked it
        finish_reason=reason,  # type: ignore[arg-type]  # one of FINISH_REASONS
        redactions=redactions,
    )


def without_keys(result: GenerationResult) -> GenerationResult:
    """`result` with the configured API keys' text replaced by *** and counted: model
    output is written to the cache and samples.jsonl, and a server may echo the key."""
    text, found = redact_keys(result.text)
    return replace(result, text=text, redactions=result.redactions + found) if found else result


def loglik_to_payload(result: LoglikResult) -> dict:
    return {"logprobs": list(result.logprobs), "n_tokens": list(result.n_tokens)}


def loglik_from_payload(payload: dict) -> LoglikResult | None:
    """The cached result, or None when the row does not hold one (a miss)."""
    logprobs, n_tokens = payload.get("logprobs"), payload.get("n_tokens", [])
    if (
        not isinstance(logprobs, list)
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in logprobs)
        or not isinstance(n_tokens, list)
        or not all(_count(n) for n in n_tokens)
    ):
        return None
    return LoglikResult(tuple(float(v) for v in logprobs), tuple(n_tokens))


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _from_cache(
    found: dict[str, dict],
    keys: Sequence[str],
    parse: Callable[[dict], R | None],
    cache: ResponseCache | None,
) -> list[R | None]:
    """The cached result of each key, None where there is none or it cannot be read."""
    results: list[R | None] = []
    bad = 0
    for key in keys:
        payload = found.get(key)
        result = parse(payload) if payload is not None else None
        bad += payload is not None and result is None
        results.append(result)
    if bad and cache is not None:
        cache.misread(bad)
    return results


def _report_cached(
    report: Callable[[int], None] | None, found: Mapping[str, Any], results: Sequence[Any]
) -> None:
    """How many answers were read back from the cache (none looked up: no call)."""
    if report is not None and found:
        report(sum(r is not None for r in results))


def cached_generate(
    backend: Backend,
    requests: Sequence[GenerationRequest],
    cache: ResponseCache | None,
    *,
    batch_size: int | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[list[GenerationResult], int]:
    """Answer `requests` from the cache where possible and generate only the rest.

    Returns the results in request order and how many were generated now. Each result
    is committed as the backend hands it on (`Backend`), before the backend goes on.
    """
    (done,) = cached_generate_together(
        backend, [requests], cache, batch_size=batch_size, on_progress=on_progress
    )
    return done.results, done.generated


@dataclass(frozen=True)
class Generated:
    """One list of `cached_generate_together`: its results in request order, how many
    were generated now (identical requests once) and the tokens they generated, and how
    many cached rows could not be read back (generated again)."""

    results: list[GenerationResult]
    generated: int
    tokens: int
    unreadable: int


def cached_generate_together(
    backend: Backend,
    groups: Sequence[Sequence[GenerationRequest]],
    cache: ResponseCache | None,
    *,
    batch_size: int | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_cached: Callable[[int], None] | None = None,
) -> list[Generated]:
    """`cached_generate` of several lists of requests in one call to the backend, so
    that they share its batches (a prompt's greedy and constrained requests share its
    prefill). `on_progress(n)`: n more answers generated; those read back from the cache
    are reported first, at once, to `on_cached(n)` when given (else to `on_progress`)."""
    requests = [r for group in groups for r in group]
    keys = [
        request_key("generate", backend.identity, backend.render_prompt(r), r.settings())
        for r in requests
    ]
    found = cache.get_many(keys) if cache is not None else {}
    results = [
        without_keys(r) if r is not None else None
        for r in _from_cache(found, keys, generation_from_payload, cache)
    ]
    _report_cached(on_cached or on_progress, found, results)
    missing = [i for i, r in enumerate(results) if r is None]
    unreadable = {i for i in missing if keys[i] in found}
    # Identical requests (same key) are generated once.
    first_of_key: dict[str, int] = {}
    for i in missing:
        first_of_key.setdefault(keys[i], i)
    todo = list(first_of_key.values())
    copies = Counter(keys[i] for i in missing)

    def store(ended: list[tuple[int, GenerationResult]]) -> None:
        batch = [(j, without_keys(r)) for j, r in ended]
        # a refusal (no text after every retry) is asked again next time, never cached
        pairs = [(keys[todo[j]], generation_to_payload(r)) for j, r in batch if not r.refused]
        if cache is not None:
            cache.put_many("generate", pairs)
        for j, res in batch:
            results[todo[j]] = res
        if on_progress is not None:
            on_progress(sum(copies[keys[todo[j]]] for j, _ in batch))

    if todo:
        backend.generate([requests[i] for i in todo], batch_size=batch_size, on_results=store)
    by_key = {keys[i]: results[i] for i in todo}
    maybe = [r if r is not None else by_key[keys[i]] for i, r in enumerate(results)]
    final = [r for r in maybe if r is not None]
    assert len(final) == len(requests)
    out: list[Generated] = []
    start = 0
    for group in groups:
        stop = start + len(group)
        new = [i for i in todo if start <= i < stop]
        out.append(
            Generated(
                results=final[start:stop],
                generated=len(new),
                tokens=sum(final[i].n_tokens for i in new),
                unreadable=sum(start <= i < stop for i in unreadable),
            )
        )
        start = stop
    return out


def cached_loglik(
    backend: Backend,
    requests: Sequence[LoglikRequest],
    cache: ResponseCache | None,
    *,
    batch_size: int | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_cached: Callable[[int], None] | None = None,
) -> tuple[list[LoglikResult], int]:
    """The log-likelihood counterpart of `cached_generate`."""
    keys = [
        request_key("loglik", backend.identity, backend.render_prompt(r), r.settings())
        for r in requests
    ]
    found = cache.get_many(keys) if cache is not None else {}
    results = _from_cache(found, keys, loglik_from_payload, cache)
    for i, result in enumerate(results):
        if result is not None and len(result.logprobs) != len(requests[i].continuations):
            results[i] = None  # a row of another shape: regenerated
            if cache is not None:
                cache.misread()
    _report_cached(on_cached or on_progress, found, results)
    todo = [i for i, r in enumerate(results) if r is None]

    def store(batch: list[tuple[int, LoglikResult]]) -> None:
        if cache is not None:
            cache.put_many("loglik", [(keys[todo[j]], loglik_to_payload(res)) for j, res in batch])
        for j, res in batch:
            results[todo[j]] = res
        if on_progress is not None:
            on_progress(len(batch))

    if todo:
        backend.loglik([requests[i] for i in todo], batch_size=batch_size, on_results=store)
    return [r for r in results if r is not None], len(todo)
