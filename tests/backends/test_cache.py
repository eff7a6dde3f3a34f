from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hakari.backends.base import GenerationRequest
from hakari.backends.cache import ResponseCache, cached_generate, request_key
from hakari.backends.fake import FakeBackend


def test_keys_change_with_every_setting() -> None:
    b = FakeBackend(lambda r: "x")
    base = GenerationRequest(prompt="p", max_new_tokens=5)
    key = lambda r: request_key("generate", b.identity, r.prompt, r.settings())  # noqa: E731
    variants = [
        GenerationRequest(prompt="p", max_new_tokens=6),
        GenerationRequest(prompt="p", max_new_tokens=5, regex="[0-2]"),
        GenerationRequest(prompt="p", max_new_tokens=5, regex="[0-3]"),
        GenerationRequest(prompt="p", max_new_tokens=5, temperature=1.0, seed=1),
        GenerationRequest(prompt="q", max_new_tokens=5),
    ]
    keys = {key(v) for v in variants}
    assert len(keys) == len(variants) and key(base) not in keys
    other = FakeBackend(lambda r: "x", name="other")
    assert request_key("generate", other.identity, "p", base.settings()) != key(base)


def test_cached_generate_dedupes_and_persists(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite3")
    b = FakeBackend(lambda r: r.prompt.upper())
    reqs = [GenerationRequest(prompt=p, max_new_tokens=3) for p in ["a", "b", "a", "c"]]
    seen: list[int] = []
    out, n_new = cached_generate(b, reqs, cache, batch_size=2, on_progress=seen.append)
    assert [r.text for r in out] == ["A", "B", "A", "C"] and n_new == 3 and sum(seen) == 4
    cache.close()
    reopened = ResponseCache(tmp_path / "c.sqlite3")
    b2 = FakeBackend(lambda r: "never")
    out2, n_new2 = cached_generate(b2, reqs, reopened)
    assert [r.text for r in out2] == ["A", "B", "A", "C"] and n_new2 == 0 and b2.generated == []
    assert reopened.count() == 3
    assert reopened._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_crash_keeps_finished_batches(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite3")
    calls = {"n": 0}

    def flaky(r: GenerationRequest) -> str:
        calls["n"] += 1
        if calls["n"] == 5:
            raise RuntimeError("boom")
        return r.prompt

    reqs = [GenerationRequest(prompt=str(i), max_new_tokens=3) for i in range(8)]
    try:
        cached_generate(FakeBackend(flaky), reqs, cache, batch_size=2)
    except RuntimeError:
        pass
    assert cache.count() == 4  # two whole batches were committed before the crash
    b = FakeBackend(lambda r: r.prompt)
    out, n_new = cached_generate(b, reqs, cache, batch_size=2)
    assert n_new == 4 and [r.text for r in out] == [str(i) for i in range(8)]


class _CommitInterrupted:
    """A connection whose first COMMIT raises KeyboardInterrupt before it runs: Ctrl-C
    landing between a write and its commit."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn, self.interrupted = conn, False

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql == "COMMIT" and not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return self.conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self.conn, name)


def test_ctrl_c_between_a_write_and_its_commit_loses_nothing(tmp_path: Path) -> None:
    """The interrupt leaves the transaction open; closing the cache (the run's `finally`,
    before the CLI says the answers are cached) commits it."""
    cache = ResponseCache(tmp_path / "c.sqlite3")
    cache._conn = _CommitInterrupted(cache._conn)  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        cache.put_many("generate", [("k1", {"text": "a"}), ("k2", {"text": "b"})])
    cache.close()
    assert ResponseCache(tmp_path / "c.sqlite3").count() == 2


def test_text_utf8_cannot_encode_is_keyed_stored_and_read_back_exactly(tmp_path: Path) -> None:
    """A lone surrogate (a server's JSON "\\ud800") in a prompt or an answer: keys are made,
    the answer is stored as its JSON escape and read back as the same string."""
    cache = ResponseCache(tmp_path / "c.sqlite3")
    reqs = [GenerationRequest(prompt="p \ud800", max_new_tokens=3)]
    out, n_new = cached_generate(FakeBackend(lambda r: "a\udfffb"), reqs, cache)
    assert n_new == 1 and out[0].text == "a\udfffb"
    out, n_new = cached_generate(FakeBackend(lambda r: "never"), reqs, cache)
    assert n_new == 0 and out[0].text == "a\udfffb" and cache.unreadable == 0
    (stored,) = cache._conn.execute("SELECT payload FROM responses").fetchone()
    assert "\\udfff" in stored


def test_a_cached_loglik_row_of_another_shape_is_regenerated(tmp_path: Path) -> None:
    from hakari.backends.base import LoglikRequest
    from hakari.backends.cache import cached_loglik

    cache = ResponseCache(tmp_path / "c.sqlite3")
    reqs = [LoglikRequest(prompt="p", continuations=("yes", "no"))]
    cached_loglik(FakeBackend(lambda r: ""), reqs, cache)
    for payload in ('{"logprobs": [-1.0]}', '{"logprobs": ["x", 1]}', '{"logprobs": [-1, -2], '
                    '"n_tokens": [1, -2]}', "[]", "{"):  # fmt: skip
        cache._conn.execute("UPDATE responses SET payload = ?", (payload,))
        before = cache.unreadable
        out, n_new = cached_loglik(FakeBackend(lambda r: ""), reqs, cache)
        assert n_new == 1 and out[0].logprobs == (-3.0, -2.0), payload
        assert cache.unreadable == before + 1
