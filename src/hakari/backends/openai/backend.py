"""`OpenAIBackend`: the `Backend` protocol on OpenAI-compatible servers (vLLM, SGLang,
`transformers serve`, hosted APIs), async inside, synchronous outside.

* Completion prompts go to `/completions`, chat prompts (`messages`) to
  `/chat/completions`; the server applies the model's chat template.
* Requests run concurrently (`ServingOptions.concurrency` per replica) on one event loop
  that lives as long as the backend (`asyncio.Runner`), so connections are reused across
  calls; the runner and the cache never see a coroutine.
* Every answer is handed to `on_results` as it arrives: the cache commits it at once, and a
  kill loses only the requests in flight.
* An answer without text (`"content": null`) is retried like a malformed one; if the
  server keeps giving none, the prompt is a refusal (`GenerationResult.refused`): scored
  as the fallback, counted in results.json, never cached.
* Stop strings follow hakari's rule (only after the first non-whitespace character) by
  asking, and re-asking only when needed: see `hakari.backends.serving`.
* Regex constraints go in the body at `regex_field`; an answer that does not fullmatch its
  regex means the server ignored the constraint: counted (`ignored_constraints`), warned
  about once, and reported by the runner for the decoding.
* Log-likelihood: `/completions` with `echo` and `logprobs` (what lm-evaluation-harness
  does); a server that returns no prompt log-probs gets one clear message.
* The identity is the model name plus a hash of what the server reports about it
  (`/models`, `identity.py`), never the URL: replicas and a restarted server share one cache.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import httpx2  # openai's HTTP client (a dependency of openai 3)
import openai

from hakari._util.redact import redact
from hakari._util.regex import compile_regex
from hakari.backends.base import (
    GenerationRequest,
    GenerationResult,
    InOrder,
    LoglikRequest,
    LoglikResult,
    Message,
    ModelIdentity,
    Needs,
    OnResults,
    check_prompt_format,
    move_trailing_space,
)
from hakari.backends.openai.faults import NoContent, fatal_message, server_detail
from hakari.backends.openai.identity import server_revision
from hakari.backends.openai.pool import Replica, ReplicaPool
from hakari.backends.openai.protocol import (
    Choice,
    NoFirstTokenLogprob,
    NoLogprobs,
    chat_messages,
    extra_fields,
    parse_chat,
    parse_completion,
    parse_echo_logprobs,
    render_messages,
    sampling_fields,
)
from hakari.backends.openai.spec import NO_KEY, OpenAISpec, api_key
from hakari.backends.serving import (
    ServingOptions,
    final_results,
    first_stops,
    reask_stops,
    to_reask,
)
from hakari.errors import HakariInputError

log = logging.getLogger(__name__)


class CannotScore(HakariInputError):
    pass


LOGLIK_NEEDS_COMPLETION = (
    "log-likelihood through a server needs completion prompts (a chat endpoint cannot "
    "echo the prompt's log-probs): add --prompt-format completion"
)
PROBE_REGEX = "7"  # the one answer a server that applies regexes can give its probe


class OpenAIBackend:
    """A model behind one or more OpenAI-compatible base URLs (replicas)."""

    def __init__(
        self,
        spec: OpenAISpec,
        *,
        prompt_format: str = "auto",
        options: ServingOptions | None = None,
        check_server: bool = True,
    ) -> None:
        check_prompt_format(prompt_format, field="prompt_format")
        self.spec = spec
        self.options = options or ServingOptions()
        self.options.check()
        self._key = api_key()
        # A server applies the chat template itself; "auto" means chat, as for a local
        # model with a template. Base models on a server: --prompt-format completion.
        self.supports_chat = prompt_format != "completion"
        self.ignored_constraints = 0
        self._warned_ignored = False
        self._runner = asyncio.Runner()
        self._pool = ReplicaPool(
            [Replica(url, self._client(url)) for url in spec.base_urls],
            self.options,
            describe_fatal=self._describe_fatal,
            redact=self._redact,
        )
        try:
            revision = self._runner.run(self._server_revision()) if check_server else ""
        except BaseException:
            self.close()
            raise
        self.identity = ModelIdentity(
            backend="openai",
            name=spec.model,
            revision=revision,
            dtype="server",
            prompt_format="chat" if self.supports_chat else "completion",
        )

    def _client(self, url: str) -> openai.AsyncOpenAI:
        # aiohttp as the transport (openai's documented `DefaultAioHttpClient`): hakari's
        # client CPU per request 1.2 -> 0.7-0.8 ms against an instant server
        # (benchmarks/bench_openai.py). One kept-alive connection per worker.
        workers = self.options.concurrency
        limits = httpx2.Limits(
            max_connections=max(1000, 2 * workers), max_keepalive_connections=workers
        )
        return openai.AsyncOpenAI(
            base_url=url,
            api_key=self._key or NO_KEY,
            max_retries=0,  # faults.py decides every retry
            timeout=self.options.request_timeout,
            http_client=openai.DefaultAioHttpClient(
                timeout=self.options.request_timeout, limits=limits
            ),
        )

    @staticmethod
    def _redact(message: str) -> str:
        """The one filter (`hakari._util.redact`): the key, URL passwords, secret query
        values and bearer tokens, even in a body a server echoed back."""
        return redact(message)

    def _describe_fatal(self, exc: BaseException, replica: Replica[openai.AsyncOpenAI]) -> str:
        if isinstance(exc, HakariInputError):
            return str(exc)
        return fatal_message(
            exc, url=replica.url, model=self.spec.model, regex_field=self.options.regex_field
        )

    # -- before the run ------------------------------------------------------------------

    async def _server_revision(self) -> str:
        return await server_revision(
            self._pool.replicas,
            self.spec.model,
            timeout=self.options.request_timeout,
            describe_fatal=self._describe_fatal,
        )

    def check_serves(self, needs: Needs) -> None:
        """Refuse, before any prompt of a run, what this server cannot do in this prompt
        format: log-likelihood through a chat endpoint (no request needed:
        no server can echo a conversation's log-probs); and, with one tiny probe each
        (retried like any request), a regex field the server rejects or ignores, echoed
        log-probs it does not return, lists of prompts it does not take."""
        if needs.loglik and self.supports_chat:
            raise CannotScore(LOGLIK_NEEDS_COMPLETION, field="--prompt-format")
        probes: list[Callable[[Replica[openai.AsyncOpenAI]], Awaitable[None]]] = []
        if needs.regex:
            probes.append(self._probe_regex)
        if needs.loglik:
            probes.append(self._probe_echo_logprobs)
        if self.options.prompts_per_request > 1 and not self.supports_chat:
            probes.append(self._probe_prompt_lists)
        if probes:
            self._runner.run(
                self._pool.run(probes, lambda replica, probe: probe(replica), lambda *_: None)
            )

    async def _probe_regex(self, replica: Replica[openai.AsyncOpenAI]) -> None:
        messages = (Message("user", "Write the digit 7."),) if self.supports_chat else None
        probe = GenerationRequest(
            prompt="7", messages=messages, max_new_tokens=3, regex=PROBE_REGEX, stop=()
        )
        (choice,) = await self._ask(replica, [probe], ())
        if choice.text != PROBE_REGEX:
            answered = "no text" if choice.text is None else repr(choice.text[:20])
            raise HakariInputError(
                self._redact(
                    f"{replica.url} ignored the regex constraint in {self.options.regex_field!r} "
                    f"(answered {answered} where only {PROBE_REGEX!r} was allowed): "
                    "constrained decoding would not be constrained; use --regex-field for "
                    "this server (vLLM: structured_outputs.regex, SGLang: regex) or leave "
                    "out --decoding constrained"
                ),
                field="--regex-field",
            )

    async def _probe_echo_logprobs(self, replica: Replica[openai.AsyncOpenAI]) -> None:
        await self._score_one(replica, (0, 0, "Hello", " world"))

    async def _probe_prompt_lists(self, replica: Replica[openai.AsyncOpenAI]) -> None:
        probes = [GenerationRequest(prompt=p, max_new_tokens=1, stop=()) for p in ("1", "2")]
        await self._ask(replica, probes, ())

    # -- prompts -------------------------------------------------------------------------

    def _is_chat(self, request: GenerationRequest | LoglikRequest) -> bool:
        return bool(request.messages) and self.supports_chat

    def render_prompt(self, request: GenerationRequest | LoglikRequest) -> str:
        if request.messages and self._is_chat(request):
            return render_messages(request.messages)
        return request.prompt

    # -- generation ----------------------------------------------------------------------

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        *,
        batch_size: int | None = None,
        on_results: OnResults[GenerationResult] | None = None,
    ) -> list[GenerationResult]:
        collected = InOrder(len(requests), on_results)

        def done(batch: Sequence[int], answers: Sequence[GenerationResult]) -> None:
            for index, result in zip(batch, answers, strict=True):
                self._check_constraint(requests[index], result)
            collected.add(list(zip(batch, answers, strict=True)))

        batches = self._batches(requests)
        first_asks: dict[tuple[int, ...], list[Choice]] = {}
        self._runner.run(
            self._pool.run(
                batches,
                lambda replica, batch: self._generate_batch(
                    replica, [requests[i] for i in batch], first_asks, tuple(batch)
                ),
                done,
            )
        )
        return collected.results()

    def _batches(self, requests: Sequence[GenerationRequest]) -> list[tuple[int, ...]]:
        """Indices of the requests that go together in one HTTP request: completion
        prompts whose bodies differ only in the prompt, up to `prompts_per_request` of
        them; a chat request always alone (the endpoint takes one conversation)."""
        per_request = self.options.prompts_per_request
        if per_request == 1:
            return [(i,) for i in range(len(requests))]
        groups: dict[str, list[int]] = {}
        singles: list[tuple[int, ...]] = []
        for i, request in enumerate(requests):
            if self._is_chat(request):
                singles.append((i,))
                continue
            body = self._body(request, first_stops(request))
            groups.setdefault(json.dumps(body, sort_keys=True), []).append(i)
        batches = [
            tuple(group[s : s + per_request])
            for group in groups.values()
            for s in range(0, len(group), per_request)
        ]
        return sorted(batches + singles)

    async def _generate_batch(
        self,
        replica: Replica[openai.AsyncOpenAI],
        batch: Sequence[GenerationRequest],
        first_asks: dict[tuple[int, ...], list[Choice]],
        key: tuple[int, ...],
    ) -> list[GenerationResult]:
        """Answers of one batch (see `_batches`), re-asking only the prompts that need it
        (hakari's stop rule, `hakari.backends.serving`). A first ask that came back whole
        is kept in `first_asks` under the batch's `key`: when a fault hits the re-ask and
        the pool retries the batch, only the re-ask is sent again (no prompt reaches the
        model twice for one answer)."""
        kept = first_asks.get(key)
        if kept is None:
            kept = await self._ask(replica, batch, first_stops(batch[0]))
            if all(choice.text is not None for choice in kept):
                first_asks[key] = kept
        choices = list(kept)
        again = to_reask(batch, choices)
        if again:
            stops = reask_stops(batch[again[0]]) or ()
            redone = await self._ask(replica, [batch[i] for i in again], stops)
            for i, choice in zip(again, redone, strict=True):
                choices[i] = choice
        results = final_results(batch, choices)
        refused = sum(r.refused for r in results)
        if refused:
            raise NoContent(refused, results)  # retried; if it persists, these stand
        return results

    def _body(self, request: GenerationRequest, stops: Sequence[str]) -> dict[str, Any]:
        body = sampling_fields(request, stops) | extra_fields(request, self.options.regex_field)
        body["model"] = self.spec.model
        return body

    async def _ask(
        self,
        replica: Replica[openai.AsyncOpenAI],
        batch: Sequence[GenerationRequest],
        stops: Sequence[str],
    ) -> list[Choice]:
        """One HTTP request for requests that share everything but the prompt."""
        body = self._body(batch[0], stops)
        if self._is_chat(batch[0]):
            assert len(batch) == 1 and batch[0].messages is not None
            body["messages"] = chat_messages(batch[0].messages)
            return [parse_chat(await self._post(replica, "/chat/completions", body))]
        if len(batch) == 1:
            body["prompt"] = batch[0].prompt
            return parse_completion(await self._post(replica, "/completions", body), 1)
        body["prompt"] = [r.prompt for r in batch]
        try:
            content = await self._post(replica, "/completions", body)
        except openai.APIStatusError as exc:
            detail = server_detail(exc)
            top = self.options.regex_field.split(".")[0]
            if exc.status_code in (400, 422) and top not in detail and "regex" not in detail:
                raise HakariInputError(
                    self._redact(
                        f"{replica.url} rejected a request with {len(batch)} prompts "
                        f"({exc.status_code}: {detail[:160]}); if this server takes one prompt "
                        "per request (transformers serve does), use --prompts-per-request 1"
                    ),
                    field="--prompts-per-request",
                ) from None
            raise
        return parse_completion(content, len(batch))

    @staticmethod
    async def _post(replica: Replica[openai.AsyncOpenAI], path: str, body: dict[str, Any]) -> bytes:
        """POST a plain JSON body through the client (its auth, timeouts and errors) and
        return the raw answer: the typed `create()` spends ~1 ms a request validating
        and transforming arguments hakari already built, and parses a model hakari
        does not use."""
        response = await replica.client.post(path, body=body, cast_to=httpx2.Response)
        return response.content

    def _check_constraint(self, request: GenerationRequest, result: GenerationResult) -> None:
        if request.regex is None or result.finish_reason in ("length", "refused"):
            return
        if compile_regex(request.regex).fullmatch(result.text):  # linear: untrusted text
            return
        self.ignored_constraints += 1
        if not self._warned_ignored:
            self._warned_ignored = True
            log.warning(
                "%s ignored a regex constraint (answer %r does not match %r): counted and "
                "reported in results; use a server that applies %s",
                self.spec.model,
                result.text[:40],
                request.regex[:60],
                self.options.regex_field,
            )

    # -- log-likelihood --------------------------------------------------------------------

    def loglik(
        self,
        requests: Sequence[LoglikRequest],
        *,
        batch_size: int | None = None,
        on_results: OnResults[LoglikResult] | None = None,
    ) -> list[LoglikResult]:
        """Sum log-probs of each continuation: one `/completions` request per (context,
        continuation) with `echo`, `logprobs=1`, `max_tokens=1`; the continuation's tokens
        are the echoed tokens whose text offset lies within its length of the prompt's
        end (`parse_echo_logprobs`). Trailing whitespace of the context moves to the
        continuation, as in lm-evaluation-harness and the HF backend."""
        if any(self._is_chat(r) for r in requests):
            raise CannotScore(LOGLIK_NEEDS_COMPLETION, field="--decoding")
        values: list[list[tuple[float, int] | None]] = [
            [None] * len(r.continuations) for r in requests
        ]
        collected = InOrder(len(requests), on_results)

        def done(job: tuple[int, int, str, str], value: tuple[float, int]) -> None:
            i, j = job[0], job[1]
            values[i][j] = value
            if all(v is not None for v in values[i]):
                scored = [v for v in values[i] if v is not None]
                logprobs, n_tokens = tuple(v[0] for v in scored), tuple(v[1] for v in scored)
                collected.add([(i, LoglikResult(logprobs=logprobs, n_tokens=n_tokens))])

        jobs = [
            (i, j, *move_trailing_space(request.prompt, continuation))
            for i, request in enumerate(requests)
            for j, continuation in enumerate(request.continuations)
        ]
        for i, request in enumerate(requests):
            if not request.continuations:
                collected.add([(i, LoglikResult(logprobs=(), n_tokens=()))])
        self._runner.run(self._pool.run(jobs, self._score_one, done))
        return collected.results()

    async def _score_one(
        self, replica: Replica[openai.AsyncOpenAI], job: tuple[int, int, str, str]
    ) -> tuple[float, int]:
        _, _, context, continuation = job
        if not continuation:
            return 0.0, 0
        body = {
            "model": self.spec.model,
            "prompt": context + continuation,
            "max_tokens": 1,
            "temperature": 0.0,
            "echo": True,
            "logprobs": 1,
        }
        content = await self._post(replica, "/completions", body)
        try:
            return parse_echo_logprobs(content, len(continuation))
        except NoFirstTokenLogprob:
            raise CannotScore(
                f"{self.spec.model} adds no BOS token, so a continuation with nothing before "
                "it has no log-prob for its first token: give the task a prompt",
                field="prompt",
            ) from None
        except NoLogprobs:
            raise CannotScore(
                f"{replica.url} cannot score continuations: it returned no prompt log-probs "
                "for echo=True, logprobs=1 (vLLM does; transformers serve does not); use "
                "--decoding greedy or constrained with this server",
                field="--decoding",
            ) from None

    def close(self) -> None:
        async def close_clients() -> None:
            for replica in self._pool.replicas:
                await replica.client.close()

        try:
            self._runner.run(close_clients())
        finally:
            self._runner.close()
