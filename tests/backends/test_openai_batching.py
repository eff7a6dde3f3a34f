"""Several completion prompts per `/completions` request (`--prompts-per-request`): which
requests go together, answers aligned by the choices' `index` (never by their order),
every answer of a batch committed as the batch arrives, faults retry the whole batch,
the stop rule re-asks only the prompts that need it, and a server that refuses lists is
one clear line. Scripted loopback servers (tests/helpers/http_doubles.py)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from hakari.backends.base import GenerationRequest, Message
from hakari.backends.cache import ResponseCache, cached_generate
from hakari.backends.openai import OpenAIBackend, parse_spec
from hakari.backends.openai.faults import ServerError
from hakari.backends.serving import ServingOptions
from hakari.errors import HakariInputError
from tests.helpers.http_doubles import Reply, Seen, StubServer, chat, completion, completions

SECRET = "sk-hakari-batch-test-0123456789"
BATCHED = ServingOptions(
    concurrency=2,
    request_timeout=2.0,
    backoff_base=0.01,
    backoff_cap=0.05,
    max_attempts=4,
    prompts_per_request=8,
)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HAKARI_API_KEY", SECRET)


def echo(seen: Seen) -> Reply:
    """Each prompt's answer names its prompt; lists answered in reverse order."""
    if seen.path.endswith("/chat/completions"):
        return Reply(body=chat(" " + seen.body["messages"][-1]["content"]))
    prompt = seen.body["prompt"]
    if isinstance(prompt, list):
        return Reply(body=completions([f" {p}" for p in prompt], reverse=True))
    return Reply(body=completion(f" {prompt}"))


def start(servers: list[StubServer], respond: Callable[[Seen], Reply]) -> StubServer:
    server = StubServer(respond)
    servers.append(server)
    return server


def backend(url: str, options: ServingOptions = BATCHED, fmt: str = "completion") -> OpenAIBackend:
    return OpenAIBackend(parse_spec(f"openai:stub-model@{url}"), prompt_format=fmt, options=options)


def prompts(n: int, **settings: object) -> list[GenerationRequest]:
    return [GenerationRequest(prompt=f"p{i}", max_new_tokens=8, **settings) for i in range(n)]  # type: ignore[arg-type]


def test_prompts_go_in_lists_and_answers_follow_the_index(servers: list[StubServer]) -> None:
    server = start(servers, echo)
    b = backend(server.url)
    batches: list[list[int]] = []
    results = b.generate(prompts(20), on_results=lambda done: batches.append([i for i, _ in done]))
    assert [r.text for r in results] == [f" p{i}" for i in range(20)]
    sent = [s.body["prompt"] for s in server.generations()]
    assert sorted(map(len, sent)) == [4, 8, 8] and all(isinstance(p, list) for p in sent)
    assert sorted(len(b) for b in batches) == [4, 8, 8]  # one on_results call per answer list
    assert sorted(i for b in batches for i in b) == list(range(20))
    b.close()


def test_only_identical_bodies_share_a_request(servers: list[StubServer]) -> None:
    server = start(servers, echo)
    b = backend(server.url, fmt="auto")
    mixed = [
        *prompts(3),
        *prompts(2, stop=("\n\n",)),
        GenerationRequest(prompt="r", max_new_tokens=8, regex="[0-2]", stop=()),
        GenerationRequest(prompt="long", max_new_tokens=30),
        GenerationRequest(prompt="c", max_new_tokens=8, messages=(Message("user", "hi"),)),
        GenerationRequest(prompt="c2", max_new_tokens=8, messages=(Message("user", "yo"),)),
    ]
    b.generate(mixed)
    seen = server.generations()

    def shown(body: dict[str, object]) -> str:
        prompt = body.get("prompt")
        return "|".join(prompt) if isinstance(prompt, list) else str(prompt or "chat")

    lists = sorted(shown(s.body) for s in seen)
    assert lists == sorted(["chat", "chat", "p0|p1|p2", "p0|p1", "r", "long"])
    assert sum(s.path.endswith("/chat/completions") for s in seen) == 2
    b.close()


@pytest.mark.parametrize(
    "bad",
    [
        completions([" a", " b"]),  # too few choices for 3 prompts
        {"choices": [{"index": 0, "text": "x", "finish_reason": "stop"}] * 3},  # duplicates
        {"choices": [{"text": "x", "finish_reason": "stop"}] * 3},  # no index
    ],
    ids=["missing", "duplicate-index", "no-index"],
)
def test_misaligned_answers_are_retried_never_used(
    servers: list[StubServer], bad: dict[str, object]
) -> None:
    calls: list[int] = []
    lock = threading.Lock()

    def respond(seen: Seen) -> Reply:
        with lock:
            calls.append(1)
            first = len(calls) == 1
        return Reply(body=bad) if first else echo(seen)

    server = start(servers, respond)
    b = backend(server.url)
    results = b.generate(prompts(3))
    assert [r.text for r in results] == [" p0", " p1", " p2"] and len(calls) == 2
    b.close()


def test_stop_rule_reasks_only_the_prompts_that_need_it(servers: list[StubServer]) -> None:
    def respond(seen: Seen) -> Reply:
        def answer(p: str) -> str:
            raw = "\n\nTokyo\nmore" if p == "p1" else f" {p}\nrest"
            stops = seen.body.get("stop") or []
            cut = min((raw.find(s) for s in stops if s in raw), default=-1)
            return raw[:cut] if cut >= 0 else raw

        prompt = seen.body["prompt"]
        if isinstance(prompt, list):
            return Reply(body=completions([answer(p) for p in prompt]))
        return Reply(body=completion(answer(prompt)))

    server = start(servers, respond)
    b = backend(server.url)
    results = b.generate(prompts(3))
    assert [r.text for r in results] == [" p0", "\n\nTokyo", " p2"]
    assert [(s.body["prompt"], s.body.get("stop")) for s in server.generations()] == [
        (["p0", "p1", "p2"], ["\n"]),
        ("p1", None),
    ]
    b.close()


def test_a_batch_is_committed_whole_and_a_rerun_sends_only_the_rest(
    servers: list[StubServer], tmp_path: Path
) -> None:
    healthy = threading.Event()
    answered: list[int] = []
    lock = threading.Lock()

    def respond(seen: Seen) -> Reply:
        with lock:
            answered.append(1)
            first = len(answered) == 1
        if first or healthy.is_set():
            return echo(seen)
        return Reply(500, {"error": {"message": "down"}})

    server = start(servers, respond)
    one_worker = dataclasses.replace(BATCHED, concurrency=1)
    b = backend(server.url, options=one_worker)
    cache = ResponseCache(tmp_path / "responses.sqlite3")
    with pytest.raises(ServerError):
        cached_generate(b, prompts(20), cache)
    healthy.set()
    first_batch = server.generations()[0].body["prompt"]
    before = len(server.generations())
    results, generated = cached_generate(b, prompts(20), cache)
    assert generated == 12 and [r.text for r in results] == [f" p{i}" for i in range(20)]
    resent = [p for s in server.generations()[before:] for p in s.body["prompt"]]
    assert sorted(resent) == sorted(set(f"p{i}" for i in range(20)) - set(first_batch))
    cache.close()
    b.close()


def test_server_that_refuses_lists_is_one_clear_line(servers: list[StubServer]) -> None:
    def respond(seen: Seen) -> Reply:
        if isinstance(seen.body.get("prompt"), list):
            detail = [{"loc": ["body", "prompt"], "msg": "Input should be a valid string"}]
            return Reply(422, {"detail": detail})
        return echo(seen)

    server = start(servers, respond)
    b = backend(server.url)
    with pytest.raises(HakariInputError) as info:
        b.generate(prompts(5))
    message = str(info.value)
    assert "--prompts-per-request 1" in message and "422" in message and "\n" not in message
    assert SECRET not in message
    assert len(server.generations()) == 1  # not retried
    b.close()


def test_prompts_per_request_is_checked() -> None:
    with pytest.raises(HakariInputError, match="--prompts-per-request"):
        ServingOptions(prompts_per_request=0).check()
