"""The OpenAI-compatible backend against scripted loopback servers: retries and what is
not retried, failover between replicas, bounded concurrency, per-response results, the
stop rule, regex fields, log-likelihood through echo, and the API key kept out of every
message. (tests/e2e/test_serving_server.py runs it against a real server.)"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

import pytest

from hakari.backends.base import GenerationRequest, LoglikRequest, Message, StopAfter
from hakari.backends.openai import OpenAIBackend, parse_spec
from hakari.backends.openai.faults import ServerError
from hakari.backends.serving import ServingOptions
from hakari.errors import HakariInputError, ModelLoadError
from tests.helpers.deadline import within_deadline
from tests.helpers.http_doubles import Reply, Seen, StubServer, chat, completion

SECRET = "sk-hakari-test-0123456789abcdef"
FAST = ServingOptions(
    concurrency=4, request_timeout=2.0, backoff_base=0.01, backoff_cap=0.05, max_attempts=6
)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HAKARI_API_KEY", SECRET)


def serve(
    servers: list[StubServer], respond: Callable[[Seen], Reply], models_too: bool = False
) -> StubServer:
    server = StubServer(respond, models_too=models_too)
    servers.append(server)
    return server


def backend(*urls: str, options: ServingOptions = FAST, fmt: str = "completion") -> OpenAIBackend:
    spec = parse_spec(f"openai:stub-model@{','.join(urls)}")
    return OpenAIBackend(spec, prompt_format=fmt, options=options)


def echo_prompt(seen: Seen) -> Reply:
    if seen.path.endswith("/chat/completions"):
        return Reply(body=chat(" " + seen.body["messages"][-1]["content"] + "\nrest"))
    return Reply(body=completion(" " + seen.body["prompt"] + "\nrest"))


def requests(n: int) -> list[GenerationRequest]:
    return [GenerationRequest(prompt=f"p{i}", max_new_tokens=8) for i in range(n)]


def test_spec_parsing() -> None:
    spec = parse_spec("openai:Qwen/Qwen2.5-7B-Instruct@http://a:8000/v1,http://b:8000/v1/")
    assert spec.model == "Qwen/Qwen2.5-7B-Instruct"
    assert spec.base_urls == ("http://a:8000/v1", "http://b:8000/v1")
    for bad in ("openai:model", "openai:@http://a/v1", "openai:m@ftp://a", "openai:m@http://u:p@a"):
        with pytest.raises(ModelLoadError):
            parse_spec(bad)


def test_answers_in_order_each_committed_as_it_arrives(servers: list[StubServer]) -> None:
    server = serve(servers, echo_prompt)
    b = backend(server.url)
    batches: list[list[int]] = []
    results = b.generate(requests(20), on_results=lambda done: batches.append([i for i, _ in done]))
    assert [r.text for r in results] == [f" p{i}" for i in range(20)]
    assert all(len(batch) == 1 for batch in batches) and len(batches) == 20
    body = server.generations()[0].body
    assert body["stop"] == ["\n"] and body["temperature"] == 0.0 and body["max_tokens"] == 8
    assert server.seen[0].headers["authorization"] == f"Bearer {SECRET}"
    b.close()


def test_concurrency_is_bounded(servers: list[StubServer]) -> None:
    server = serve(servers, lambda seen: Reply(body=completion(" x"), stall=0.05))
    b = backend(server.url, options=ServingOptions(concurrency=3))
    b.generate(requests(24))
    assert server.max_in_flight == 3
    b.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault",
    [
        Reply(429, {"error": {"message": "slow"}}, headers={"retry-after-ms": "300"}),
        Reply(503, {"error": {"message": "busy"}}),
        Reply(200, b"<html>not json</html>"),
        Reply(200, {"id": "x"}),  # no choices
        Reply(200, completion("late"), stall=3.0),  # past the 2 s timeout
        Reply(reset=True),
    ],
    ids=["429", "503", "not-json", "no-choices", "stall", "reset"],
)
def test_faults_are_retried(servers: list[StubServer], fault: Reply) -> None:
    calls: list[float] = []
    lock = threading.Lock()

    def respond(seen: Seen) -> Reply:
        with lock:
            calls.append(time.monotonic())
            first = len(calls) == 1
        return fault if first else echo_prompt(seen)

    server = serve(servers, respond)
    b = backend(server.url)
    (result,) = b.generate(requests(1))
    assert result.text == " p0" and len(calls) == 2
    if fault.status == 429:  # honours retry-after-ms
        assert calls[1] - calls[0] >= 0.3
    b.close()


def test_retries_are_capped(servers: list[StubServer]) -> None:
    server = serve(servers, lambda seen: Reply(500, {"error": {"message": "down"}}))
    b = backend(server.url)
    done: list[int] = []
    with pytest.raises(ServerError, match=r"gave up on a request after 6 attempts.*HTTP 500"):
        b.generate(requests(1), on_results=lambda batch: done.extend(i for i, _ in batch))
    assert len(server.generations()) == 6 and not done
    b.close()


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, r"refused the API key \(401"),
        (403, r"access denied \(403"),
        (404, r"not found \(404.*ends in /v1"),
        (400, r"rejected the request \(400"),
    ],
)
def test_client_errors_fail_at_once_without_the_key(
    servers: list[StubServer], status: int, message: str
) -> None:
    # a hostile server that echoes the Authorization header back in its error
    def respond(seen: Seen) -> Reply:
        return Reply(status, {"error": {"message": f"bad: {seen.headers['authorization']}"}})

    server = serve(servers, respond)
    b = backend(server.url)
    with pytest.raises(ServerError, match=message) as info:
        b.generate(requests(3))
    assert SECRET not in str(info.value) and "***" in str(info.value)
    assert len(server.generations()) <= 3  # no retries
    b.close()


def test_a_chat_only_model_asked_for_a_text_completion_is_told_to_use_chat(
    servers: list[StubServer],
) -> None:
    # OpenAI's answer when a chat model gets a /completions request (a jaster set's plain
    # text under --prompt-format auto): the line names the option that fixes it
    refusal = "This is a chat model and not supported in the v1/completions endpoint."

    def respond(seen: Seen) -> Reply:
        if seen.path.endswith("/chat/completions"):
            return echo_prompt(seen)
        return Reply(404, {"error": {"message": refusal}})

    server = serve(servers, respond)
    b = backend(server.url)
    with pytest.raises(ServerError, match=r"takes chat requests only.*--prompt-format chat"):
        b.generate(requests(1))
    b.close()
    b = backend(server.url, fmt="chat")
    req = GenerationRequest(prompt="p0", messages=(Message("user", "p0"),), max_new_tokens=8)
    assert b.generate([req])[0].text == " p0"
    b.close()
    # a 404 of a chat request, or one that does not speak of chat, keeps the URL hint
    lost = serve(servers, lambda seen: Reply(404, {"error": {"message": "no such chat route"}}))
    b = backend(lost.url, fmt="chat")
    with pytest.raises(ServerError, match=r"not found \(404.*ends in /v1"):
        b.generate([req])
    b.close()


def test_checked_before_the_run(servers: list[StubServer]) -> None:
    unauthorized = serve(
        servers, lambda s: Reply(401, {"error": {"message": f"no {SECRET}"}}), models_too=True
    )
    with pytest.raises(ModelLoadError, match="refused the API key") as info:
        backend(unauthorized.url)
    assert SECRET not in str(info.value)
    with socket_closed_port() as port:
        with pytest.raises(ModelLoadError, match=r"cannot reach http://127.0.0.1:\d+/v1"):
            backend(f"http://127.0.0.1:{port}/v1")
    other = serve(servers, echo_prompt)
    other.model_list = {"object": "list", "data": [{"id": "another-model"}]}
    with pytest.raises(ModelLoadError, match=r"does not serve model 'stub-model'.*another-model"):
        backend(other.url)
    assert not other.generations()


class socket_closed_port:  # a context manager used like a function
    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return int(self.sock.getsockname()[1])  # bound, not listening: connection refused

    def __exit__(self, *args: object) -> None:
        self.sock.close()


def test_identity_ignores_the_url_and_volatile_fields(servers: list[StubServer]) -> None:
    a, b = serve(servers, echo_prompt), serve(servers, echo_prompt)
    one, two = backend(a.url), backend(b.url)  # "created" differs between the two
    assert one.identity == two.identity
    assert one.identity.revision.startswith("server-") and a.url not in str(one.identity)
    b.model_list = {"object": "list", "data": [{"id": "stub-model", "max_model_len": 4096}]}
    assert backend(b.url).identity.revision != one.identity.revision
    for x in (one, two):
        x.close()


def test_failing_replica_is_taken_out(
    servers: list[StubServer], caplog: pytest.LogCaptureFixture
) -> None:
    healthy = serve(servers, echo_prompt)
    broken = serve(servers, lambda seen: Reply(502, b"bad gateway"))
    b = backend(broken.url, healthy.url, options=FAST)
    with caplog.at_level(logging.WARNING):
        results = b.generate(requests(40))
    assert [r.text for r in results] == [f" p{i}" for i in range(40)]
    # taken out after 5 failures in a row; the requests in flight then fail too
    assert len(broken.generations()) <= FAST.replica_failures + FAST.concurrency - 1
    assert "taken out" in caplog.text
    b.close()


def test_stop_inside_leading_whitespace_is_reasked(servers: list[StubServer]) -> None:
    def respond(seen: Seen) -> Reply:
        raw = "\n\n1. Tokyo\nmore"
        stops = seen.body.get("stop") or []
        cut = min((raw.find(s) for s in stops if s in raw), default=-1)
        return Reply(body=completion(raw[:cut] if cut >= 0 else raw))

    server = serve(servers, respond)
    b = backend(server.url)
    (result,) = b.generate([GenerationRequest(prompt="Q", max_new_tokens=20)])
    assert result.text == "\n\n1. Tokyo" and result.finish_reason == "stop"
    assert [s.body.get("stop") for s in server.generations()] == [["\n"], None]
    b.close()


def test_stop_after_cuts_the_answer_line(servers: list[StubServer]) -> None:
    server = serve(servers, lambda seen: Reply(body=completion("It is 1, I think")))
    b = backend(server.url)
    plain, ruled = b.generate(
        [
            GenerationRequest(prompt="Q", max_new_tokens=20),
            GenerationRequest(
                prompt="Q", max_new_tokens=20, stop_after=StopAfter(regex="1", chars=2)
            ),
        ]
    )
    assert plain.text == "It is 1, I think"
    assert (ruled.text, ruled.finish_reason) == ("It is 1,", "stop")
    assert all("stop_after" not in s.body for s in server.generations())
    b.close()


def test_a_fault_on_the_reask_sends_only_the_reask_again(servers: list[StubServer]) -> None:
    """The first ask came back whole; the re-ask hits a 500 and the pool retries the
    batch: the first ask is not sent again (the real vLLM server under the fault proxy
    got one prompt 4 times before)."""
    reasks: list[int] = []
    lock = threading.Lock()

    def respond(seen: Seen) -> Reply:
        raw = "\n\n1. Tokyo\nmore"
        stops = seen.body.get("stop") or []
        if not stops:  # the re-ask (no stop strings): fail the first one
            with lock:
                reasks.append(1)
                if len(reasks) == 1:
                    return Reply(500, {"error": {"message": "down"}})
        cut = min((raw.find(s) for s in stops if s in raw), default=-1)
        return Reply(body=completion(raw[:cut] if cut >= 0 else raw))

    server = serve(servers, respond)
    b = backend(server.url)
    (result,) = b.generate([GenerationRequest(prompt="Q", max_new_tokens=20)])
    assert result.text == "\n\n1. Tokyo" and result.finish_reason == "stop"
    assert [s.body.get("stop") for s in server.generations()] == [["\n"], None, None]
    b.close()


def test_regex_field_and_ignored_constraints(
    servers: list[StubServer], caplog: pytest.LogCaptureFixture
) -> None:
    server = serve(servers, lambda seen: Reply(body=completion("maybe")))  # ignores the regex
    b = backend(server.url)
    regex = GenerationRequest(prompt="Q", max_new_tokens=3, regex="[0-2]", stop=())
    with caplog.at_level(logging.WARNING):
        b.generate([regex, regex, regex])
    assert server.generations()[0].body["structured_outputs"] == {"regex": "[0-2]"}
    assert "stop" not in server.generations()[0].body
    assert b.ignored_constraints == 3 and caplog.text.count("ignored a regex constraint") == 1
    sglang = backend(server.url, options=ServingOptions(regex_field="regex"))
    sglang.generate([regex])
    assert server.generations()[-1].body["regex"] == "[0-2]"
    for x in (b, sglang):
        x.close()


def test_server_without_regex_support_is_one_clear_error(servers: list[StubServer]) -> None:
    def respond(seen: Seen) -> Reply:
        if "structured_outputs" in seen.body:
            return Reply(
                422, {"detail": "Unexpected fields in the request: {'structured_outputs'}"}
            )
        return echo_prompt(seen)

    server = serve(servers, respond)
    b = backend(server.url)
    with pytest.raises(ServerError, match="cannot apply regex constraints"):
        b.generate([GenerationRequest(prompt="Q", max_new_tokens=3, regex="[0-2]")])
    assert len(server.generations()) == 1
    b.close()


def test_chat_prompts_go_to_chat_completions(servers: list[StubServer]) -> None:
    server = serve(servers, echo_prompt)
    b = backend(server.url, fmt="auto")
    req = GenerationRequest(prompt="p", max_new_tokens=5, messages=(Message("user", "hi"),))
    (result,) = b.generate([req])
    assert result.text == " hi" and server.generations()[0].path == "/v1/chat/completions"
    assert server.generations()[0].body["messages"] == [{"role": "user", "content": "hi"}]
    assert b.render_prompt(req) == '[{"role": "user", "content": "hi"}]'
    b.close()


def vllm_echo(bos: str = "", leading_space: bool = False) -> Callable[[Seen], Reply]:
    """Answers echo + logprobs as vLLM does: every token decoded on its own, `text_offset`
    the running sum of those texts' lengths (so the BOS token's text shifts every offset;
    SentencePiece models get their first word's space back), the first token without a
    log-prob, one generated token after the prompt, `usage.prompt_tokens`. Words are
    tokens; a CJK character is three byte tokens that decode to "", "" and the character.
    A token's log-prob is -0.5 per character of its text (-0.5 for a byte token)."""

    def respond(seen: Seen) -> Reply:
        prompt = seen.body["prompt"]
        pieces: list[str] = [bos] if bos else []
        for word in re.findall(r"\s*[^\s\u3000-\u9fff]+|\s*[\u3000-\u9fff]", prompt):
            if re.fullmatch(r"\s*[\u3000-\u9fff]", word):
                pieces += ["", "", word]
            else:
                pieces.append(word)
        if leading_space:
            pieces[1 if bos else 0] = " " + pieces[1 if bos else 0].lstrip()
        logprobs: list[float | None] = [None] + [-0.5 * max(len(p), 1) for p in pieces[1:]]
        offsets = [sum(len(p) for p in pieces[:i]) for i in range(len(pieces) + 1)]
        lp = {"tokens": [*pieces, "!"], "token_logprobs": [*logprobs, -9.0],
              "text_offset": offsets, "top_logprobs": None}  # fmt: skip
        body = completion(prompt + "!", finish="length", logprobs=lp, stop_reason=None)
        body["usage"] = {"prompt_tokens": len(pieces), "completion_tokens": 1}
        return Reply(body=body)

    return respond


@pytest.mark.parametrize(
    ("bos", "leading_space"),
    [("", False), ("<|begin_of_text|>", False), ("<s>", True), ("<bos>", False)],
    ids=["no-bos", "llama3-bos", "sentencepiece", "gemma-bos"],
)
def test_loglik_through_echo_logprobs(
    servers: list[StubServer], bos: str, leading_space: bool
) -> None:
    server = serve(servers, vllm_echo(bos, leading_space))
    b = backend(server.url)
    (result,) = b.loglik([LoglikRequest(prompt="The answer is ", continuations=("yes", "no no"))])
    assert result.logprobs == (-2.0, -3.0)  # " yes" = 4 chars; " no" + " no"
    assert result.n_tokens == (1, 2)
    # the two continuations go concurrently: compare the bodies in any arrival order
    bodies = [seen.body for seen in server.generations()]
    assert all((b["echo"], b["logprobs"], b["max_tokens"]) == (True, 1, 1) for b in bodies)
    assert sorted(b["prompt"] for b in bodies) == ["The answer is no no", "The answer is yes"]
    b.close()


@pytest.mark.parametrize("bos", ["", "<s>"])
def test_loglik_of_japanese_continuations_through_byte_tokens(
    servers: list[StubServer], bos: str
) -> None:
    server = serve(servers, vllm_echo(bos))
    b = backend(server.url)
    (result,) = b.loglik([LoglikRequest(prompt="答え：", continuations=("含意", "矛盾する"))])
    assert result.n_tokens == (6, 12)  # three byte tokens a character
    assert result.logprobs == (-3.0, -6.0)
    b.close()


def test_loglik_without_a_context_needs_a_bos_token(servers: list[StubServer]) -> None:
    with_bos = serve(servers, vllm_echo("<s>"))
    b = backend(with_bos.url)
    (result,) = b.loglik([LoglikRequest(prompt="", continuations=("Yes",))])
    assert result.n_tokens == (1,) and result.logprobs == (-1.5,)
    b.close()
    no_bos = serve(servers, vllm_echo(""))
    b = backend(no_bos.url)
    with pytest.raises(HakariInputError, match="adds no BOS token"):
        b.loglik([LoglikRequest(prompt="", continuations=("Yes",))])
    assert len(no_bos.generations()) == 1  # not retried
    b.close()


def test_an_end_token_of_the_generation_config_is_eos(servers: list[StubServer]) -> None:
    """vLLM's stop_reason: null for the EOS token, an integer for another end token of the
    model's generation_config (Gemma's <end_of_turn>), a string for a stop string. An empty
    answer that ended on an end token is final; one cut by a stop string is re-asked."""
    reasons = iter([106, "\n"])

    def respond(seen: Seen) -> Reply:
        return Reply(body=completion("\n", stop_reason=next(reasons, "\n")))

    server = serve(servers, respond)
    b = backend(server.url)
    (ended,) = b.generate([GenerationRequest(prompt="Q", max_new_tokens=5)])
    assert ended.finish_reason == "eos" and len(server.generations()) == 1
    b.generate([GenerationRequest(prompt="R", max_new_tokens=5)])
    assert len(server.generations()) == 3  # the stop string in the leading newline: asked again
    b.close()


def test_loglik_needs_logprobs(servers: list[StubServer]) -> None:
    server = serve(servers, lambda seen: Reply(body=completion("x")))
    b = backend(server.url)
    with pytest.raises(HakariInputError, match="cannot score continuations"):
        b.loglik([LoglikRequest(prompt="Q", continuations=(" a",))])
    chat_backend = backend(server.url, fmt="chat")
    with pytest.raises(HakariInputError, match="--prompt-format completion"):
        chat_backend.loglik(
            [LoglikRequest(prompt="Q", continuations=(" a",), messages=(Message("user", "Q"),))]
        )
    for x in (b, chat_backend):
        x.close()


def test_check_spec_asks_the_server(servers: list[StubServer]) -> None:
    from hakari.backends.registry import check_spec

    server = serve(servers, echo_prompt)
    check_spec(f"openai:stub-model@{server.url}")  # runs before any model of a run loads
    with pytest.raises(ModelLoadError, match="does not serve model 'other'"):
        check_spec(f"openai:other@{server.url}")
    assert not server.generations()


def test_constraint_check_of_a_hostile_answer_returns_at_once(servers: list[StubServer]) -> None:
    """A server answer checked against its regex constraint: `(a+)+$` against 46 `a`s and
    `!` (issue 17 §1) is matched in linear time, not by Python's backtracking re."""
    evil = "a" * 46 + "!"
    server = serve(servers, lambda seen: Reply(body=completion(evil)))
    request = GenerationRequest(prompt="Q", max_new_tokens=60, regex="(a+)+$", stop=())

    def generate() -> tuple[str, int]:
        b = backend(server.url)
        (result,) = b.generate([request])
        b.close()
        return result.text, b.ignored_constraints

    assert within_deadline(generate) == (evil, 1)
