"""The backend interface: what every model backend (transformers, vLLM, an
OpenAI-compatible server, a test double) offers the engine.

Requests are plain frozen dataclasses so that they hash stably into the response cache
(see `hakari.backends.cache`). A backend receives a whole list of requests and is free to batch,
sort and schedule them; it returns results in the order of the requests, and hands each
result to the caller as soon as it ends (`Backend`), so that it is committed at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Generic, Literal, Protocol, TypeVar, cast, runtime_checkable

from hakari._util import checks
from hakari._util.regex import Subject, compile_re2
from hakari.errors import HakariInputError
from hakari.results.vocab import PromptFormat

Role = Literal["system", "user", "assistant"]

# How a request's text reaches the model: `completion` (the text as it is), `chat` (the
# tokenizer's or the server's chat template around it), `auto` (chat where the model has a
# chat template, else completion).
PROMPT_FORMATS: tuple[PromptFormat, ...] = ("auto", "chat", "completion")


def check_prompt_format(value: str, field: str = "--prompt-format") -> PromptFormat:
    """`value` as a `PromptFormat`, or one line naming the option."""
    if value not in PROMPT_FORMATS:
        raise HakariInputError(f"must be auto, chat or completion, got {value!r:.40}", field=field)
    return cast(PromptFormat, value)


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


# Bumped when the meaning of a request's settings changes, so that the response cache
# never serves a result made under the old meaning (2: stop strings skip the leading
# whitespace of the output; `max_new_chars`; no partial UTF-8 characters). A new setting
# whose default keeps the old meaning does not bump it: it enters the key only when set
# (`GenerationRequest.settings`), so only the requests that use it get new keys.
REQUEST_SEMANTICS = 2


@dataclass(frozen=True)
class StopAfter:
    """Rule 4 of `GenerationRequest`: cut the text `chars` characters past the start of
    `regex`'s leftmost match (RE2 syntax, as `hakari._util.regex.compile_re2` takes it;
    a capturing group, when present, marks where the match starts)."""

    regex: str
    chars: int


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt to complete. Every backend (transformers, vLLM, OpenAI-compatible,
    test doubles) gives these fields the same meaning.

    Prompt. `prompt` is the full completion text. When `messages` is set the backend
    renders them with the model's chat template instead (and `prompt` is ignored).

    Output text. The result's `text` is the generated text (special tokens dropped) with
    these rules applied, in this order (`apply_output_rules` implements them):

    1. **Leading whitespace is never a stop.** Stop strings take effect only after the
       first non-whitespace character of the output: an occurrence that starts inside
       the leading whitespace is ignored (a model that writes ``"\n\n1. Tokyo\n"``
       under ``stop=("\n",)`` yields ``"\n\n1. Tokyo"``, not ``""``). The text is cut
       before the earliest occurrence of any stop string that starts at or after that
       character; generation ends there (finish_reason "stop"). Output that is only
       whitespace never stops on a stop string.
    2. **Answer length limit (characters).** With `max_new_chars`, the text holds at most that many
       characters after its leading whitespace; generation ends once it has them
       (finish_reason "length"). Leading whitespace is kept and not counted. Counting
       characters, not tokens, gives every tokenizer the same room: a byte-level
       tokenizer may spend 3 tokens on one Japanese character.
    3. **No partial characters.** The text never ends in an incomplete UTF-8 sequence:
       bytes of a character the token limit cut short are held back, so U+FFFD never
       appears in an output because of the limit.
    4. **Stop after a match.** With `stop_after` (a `StopAfter`: an RE2 pattern and a
       number of characters), the text (after rules 1 and 2) is cut `stop_after.chars`
       characters past the start of the pattern's leftmost match, once it is that long;
       generation ends there (finish_reason "stop"). It depends only on the text, so a
       backend that cannot stop on it (a server) applies it to the finished text
       (`stop_after_index`); one that stops while generating checks it at each step
       and returns the same text when the pattern's matches are decided within that many
       characters of their start, as `decided_answer_stop`'s are. Label tasks use it to end a
       greedy answer once its extracted label is decided
       (`hakari.tasks.extract.decided_answer_stop`).

    Token limit. `max_new_tokens` is a hard cap on generated tokens (the only cap when
    `max_new_chars` is None). With `max_new_chars`, set it to at least
    `tokens_for_chars(max_new_chars)` so any tokenizer can reach the character limit.

    Regex. With a `regex` the output is constrained to it and generation ends as soon as
    the regex cannot be extended (finish_reason "regex_done"); stop strings do not apply
    (the regex defines the end of the answer), nor does `stop_after`; rules 2
    and 3 do. Greedy when temperature == 0.
    """

    prompt: str
    max_new_tokens: int
    messages: tuple[Message, ...] | None = None
    stop: tuple[str, ...] = ("\n",)
    regex: str | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    max_new_chars: int | None = None
    stop_after: StopAfter | None = None

    def settings(self) -> dict[str, object]:
        """Everything but the prompt text: part of the cache key. Settings added after
        REQUEST_SEMANTICS 2 enter only when set, so the keys of requests that do not use
        them stay what they were."""
        d = asdict(self)
        d.pop("prompt")
        d.pop("messages")
        if d["stop_after"] is None:
            d.pop("stop_after")
        d["semantics"] = REQUEST_SEMANTICS
        return d


MAX_TOKENS_PER_CHAR = 4  # UTF-8 needs at most 4 bytes a character; no tokenizer needs more


def tokens_for_chars(n_chars: int) -> int:
    """A token cap that lets any tokenizer (byte-level ones included) write `n_chars`
    characters."""
    return MAX_TOKENS_PER_CHAR * n_chars


def answer_start(text: str) -> int:
    """Index of the first non-whitespace character (len(text) when there is none)."""
    return len(text) - len(text.lstrip())


def stop_index(text: str, stop: Sequence[str]) -> int | None:
    """Where the text is cut by rule 1 of `GenerationRequest`: the earliest occurrence of
    a stop string that starts at or after the first non-whitespace character."""
    start = answer_start(text)
    if start == len(text):
        return None
    hits = [i for i in (text.find(s, start) for s in stop if s) if i >= 0]
    return min(hits) if hits else None


def stop_after_index(text: str, stop_after: StopAfter) -> int | None:
    """Rule 4 of `GenerationRequest`: where `text` is cut (`stop_after.chars` past the
    start of the pattern's leftmost match: of its first capturing group that took part,
    when it has groups), or None when there is no match or the text is shorter. One
    linear-time pass (RE2)."""
    subject = Subject(text)
    pattern = compile_re2(stop_after.regex)
    span = pattern.group_span(subject) or pattern.find(subject)
    if span is None:
        return None
    end = subject.char_offset(span[0]) + stop_after.chars
    return end if end <= len(text) else None


def apply_output_rules(
    text: str,
    *,
    stop: Sequence[str] = (),
    max_new_chars: int | None = None,
    stop_after: StopAfter | None = None,
) -> tuple[str, Literal["stop", "length"] | None]:
    """Rules 1, 2 and 4 of `GenerationRequest` on a decoded text: the text to return,
    and "stop" / "length" when a rule ended it (None when none did). A backend that
    cannot stop where the rules say (e.g. a server that stops at every stop string)
    generates without them and applies this to the result."""
    reason: Literal["stop", "length"] | None = None
    cut = stop_index(text, stop)
    if cut is not None:
        text, reason = text[:cut], "stop"
    if max_new_chars is not None:
        start = answer_start(text)
        if len(text) - start >= max_new_chars:
            if len(text) - start > max_new_chars or reason is None:
                reason = "length"
            text = text[: start + max_new_chars]
    if stop_after is not None:
        end = stop_after_index(text, stop_after)
        if end is not None:
            text, reason = text[:end], "stop"
    return text, reason


@dataclass(frozen=True)
class LoglikRequest:
    """Score each continuation after the context; the backend returns sum log-probs."""

    prompt: str
    continuations: tuple[str, ...]
    messages: tuple[Message, ...] | None = None

    def settings(self) -> dict[str, object]:
        """Everything but the prompt text: part of the cache key. `semantics` 2: the
        context's own tokens, then the whole text's past them (lm-evaluation-harness's
        pair; before, the whole text's tokens split at the context's length)."""
        return {"continuations": self.continuations, "semantics": LOGLIK_SEMANTICS}


LOGLIK_SEMANTICS = 2


@dataclass(frozen=True)
class Needs:
    """What a run will ask of a backend, in the backend's terms (not the runner's decoding
    names): generation constrained by a regex, log-likelihoods of continuations. A server
    checks before the run that it can do them (chat or completion prompts: the
    `PromptFormat`)."""

    regex: bool = False
    loglik: bool = False


FinishReason = Literal["stop", "length", "eos", "regex_done"]
"""Why an engine stopped an answer: a stop rule ("stop"), the length limit ("length"), the
model's end of sequence ("eos"), or a regex that cannot be extended ("regex_done")."""


@dataclass(frozen=True)
class GenerationResult:
    """`finish_reason` "refused": the server gave no text (a null or missing content)
    however often it was asked; `text` is then empty, the answer is scored as the task's
    fallback, counted (`refusals` in results.json) and never cached."""

    text: str
    n_tokens: int
    finish_reason: Literal[FinishReason, "cached", "refused"] = "stop"
    # occurrences of a configured API key replaced by *** in `text` before it was cached
    # or returned (`hakari._util.redact.redact_keys`; a server that reflects the key)
    redactions: int = 0

    @property
    def refused(self) -> bool:
        return self.finish_reason == "refused"


REFUSED = GenerationResult(text="", n_tokens=0, finish_reason="refused")


@dataclass(frozen=True)
class LoglikResult:
    logprobs: tuple[float, ...]
    n_tokens: tuple[int, ...] = field(default=())


@dataclass(frozen=True)
class ModelIdentity:
    """What identifies the model's behaviour, for cache keys and results.json."""

    backend: str
    name: str
    revision: str  # a commit, a file hash, or "" when unknown
    dtype: str = "float32"
    prompt_format: str = "completion"


R = TypeVar("R")
# Results as they end: (request index, result) pairs, those that ended together in one call
OnResults = Callable[[list[tuple[int, R]]], None]


class InOrder(Generic[R]):
    """The results of `n` requests, gathered in whatever order a backend finishes them
    and returned in request order; each `add` goes to `on_results` at once, so the
    caller persists those results before the backend goes on (the `Backend` protocol's
    promise)."""

    def __init__(self, n: int, on_results: OnResults[R] | None) -> None:
        self._results: list[R | None] = [None] * n
        self._on_results = on_results

    def add(self, ended: list[tuple[int, R]]) -> None:
        if not ended:
            return
        for index, result in ended:
            self._results[index] = result
        if self._on_results is not None:
            self._on_results(ended)

    def results(self) -> list[R]:
        missing = [i for i, r in enumerate(self._results) if r is None]
        if missing:
            raise RuntimeError(f"no result for requests {missing[:5]}")
        return cast(list[R], self._results)


def move_trailing_space(context: str, continuation: str) -> tuple[str, str]:
    """(context, continuation) with the context's trailing whitespace moved to the
    continuation, as lm-evaluation-harness scores them (tokenizers attach a space to the
    word after it): every backend's log-likelihood splits its pairs this way."""
    spaces = len(context) - len(context.rstrip())
    if not spaces:
        return context, continuation
    return context[:-spaces], context[-spaces:] + continuation


@runtime_checkable
class Backend(Protocol):
    """A backend receives a whole list of requests and is free to batch, sort and
    schedule them. It hands each result to `on_results([(request_index, result), ...])`
    as soon as that result is final, not when the rest of its batch is: those that end
    together (a decode step's ended rows, a server's answer, an engine's whole call) in
    one call, which the response cache commits in one transaction before the backend
    goes on. A crash or a kill then loses only the results still being computed."""

    identity: ModelIdentity

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        *,
        batch_size: int | None = None,
        on_results: OnResults[GenerationResult] | None = None,
    ) -> list[GenerationResult]:
        """Results in request order; each also to `on_results` as it ends."""
        ...

    def loglik(
        self,
        requests: Sequence[LoglikRequest],
        *,
        batch_size: int | None = None,
        on_results: OnResults[LoglikResult] | None = None,
    ) -> list[LoglikResult]: ...

    def render_prompt(self, request: GenerationRequest | LoglikRequest) -> str:
        """The exact text the model sees (chat template applied where asked)."""
        ...

    def close(self) -> None: ...


PROTOCOL_KEYWORDS = ("batch_size", "on_results")  # what the runner passes generate/loglik
# The most distinct prompts a batch may hold (`--batch-size`, `batch_size=`): 32 times
# the in-process default. A batch's prefill holds the keys and values of all its prompts
# at once (the decode pool bounds the rows decoded together, never one batch), so a
# larger one outgrows a device's memory on long prompts before it can help.
MAX_BATCH_SIZE = 1024


def batch_size_of(batch_size: int | None, default: int) -> int:
    """The batch size a backend uses: `default` where none is given (None), else the one
    given, checked (a whole number from 1 to `MAX_BATCH_SIZE`: 0 meant the default and
    a negative number one batch of every prompt, silently)."""
    if batch_size is None:
        return default
    return checks.integer(batch_size, "--batch-size", low=1, high=MAX_BATCH_SIZE)


def check_backend(backend: object, spec: str) -> None:
    """A custom backend (`evaluate(..., backend_factory=...)`) checked before it is asked
    anything: `generate` and `loglik` must take the keywords the runner passes
    (`PROTOCOL_KEYWORDS`), else one line saying what changed, not a TypeError from deep
    inside the runner. The previous protocol's `on_batch` is named as such."""
    import inspect

    for method in ("generate", "loglik"):
        function = getattr(backend, method, None)
        if not callable(function):
            raise HakariInputError(
                f"the backend for {spec!r} has no {method}() (the Backend protocol: "
                "hakari.backends.base.Backend)",
                field="backend_factory",
            )
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):
            continue  # a builtin or C function: nothing to read
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            continue
        missing = [k for k in PROTOCOL_KEYWORDS if k not in parameters]
        if missing:
            old = (
                " (on_batch is the previous protocol's name of on_results)"
                if ("on_batch" in parameters)
                else ""
            )
            raise HakariInputError(
                f"the backend for {spec!r}: {type(backend).__name__}.{method}() takes no "
                f"{', '.join(missing)} keyword{old}; the Backend protocol calls "
                f"{method}(requests, *, batch_size=None, on_results=None) "
                "(hakari.backends.base.Backend)",
                field="backend_factory",
            )
