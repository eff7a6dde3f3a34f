"""RenderedPrompt → backend requests, one builder per decoding.

greedy: free generation that stops at the end of the answer line (a jaster set's: at its
first blank line, llm-jp-eval's answer), or for a label task
as soon as the extracted label is decided (`stop_after`); constrained: the
template's regex masks the tokens; loglik: score every verbalisation and keep the most
likely one, as if the model had said it. Whether a prompt goes in as chat messages is
decided once per model and task (`resolve_chat`, `task_prompt_format`), unless its
template says (a space's `prompt_format` dimension: `messages`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hakari.backends import registry
from hakari.backends.base import (
    Backend,
    GenerationRequest,
    LoglikRequest,
    Message,
    Needs,
    PromptFormat,
)
from hakari.backends.cache import cached_loglik
from hakari.backends.options import LoadOptions
from hakari.errors import HakariInputError
from hakari.runner.options import Decoding
from hakari.tasks.loader import Task
from hakari.tasks.prompts import RenderedPrompt
from hakari.tasks.spec import TaskSpec

if TYPE_CHECKING:
    from hakari.runner.context import ModelContext


def task_prompt_format(spec: TaskSpec, run_format: PromptFormat) -> PromptFormat:
    """The prompt format of a task's requests: the task's own (a protocol's plain text)
    under the run's `auto`, else the run's."""
    return spec.prompt_format if run_format == "auto" and spec.prompt_format else run_format


def resolve_chat(backend: Backend, prompt_format: PromptFormat) -> bool:
    supports_chat = bool(getattr(backend, "supports_chat", False))
    if prompt_format == "chat" and not supports_chat:
        raise HakariInputError(
            f"--prompt-format chat: model {backend.identity.name} has no chat template",
            field="--prompt-format",
        )
    return prompt_format == "chat" or (prompt_format == "auto" and supports_chat)


def check_formats_before_loading(
    models: Sequence[str], tasks: Sequence[Task], load: LoadOptions, *, builtin_loader: bool
) -> None:
    """`--prompt-format chat`, and templates that go in as chat messages (a space's
    `prompt_format` level `chat`), need each model to have a chat template (where its
    files tell before it loads); such templates need the models loaded with it."""
    chat = next(
        (t for t in tasks if any(p.prompt_format == "chat" for p in t.spec.templates)), None
    )
    if chat is not None and load.prompt_format == "completion":
        raise HakariInputError(
            f"--prompt-format completion loads every model without its chat template; task "
            f"{chat.name}'s templates ask for chat (their `prompt_format` level): use auto",
            file=str(chat.path),
            field="--prompt-format",
        )
    needs_one = chat is not None or load.prompt_format == "chat"
    for spec in models if builtin_loader and needs_one else ():
        if registry.has_chat_template(spec) is not False:
            continue
        if load.prompt_format == "chat" or chat is None:
            raise HakariInputError(
                f"--prompt-format chat: model {spec!r} has no chat template; use auto "
                "(chat where a model has a template) or completion",
                field="--prompt-format",
            )
        raise _no_chat_template(chat, repr(spec))


def messages(rp: RenderedPrompt, use_chat: bool) -> tuple[Message, ...] | None:
    """The prompt as one user message, or None (plain text): the template's own format
    (a space's `prompt_format` level) where it has one, else the model and task's."""
    chat = use_chat if rp.prompt_format is None else rp.prompt_format == "chat"
    return (Message("user", rp.text),) if chat else None


def check_template_formats(task: Task, backend: Backend) -> None:
    """A task whose templates ask for chat messages runs on a model that has a chat
    template (`check_formats_before_loading` says so earlier where its files tell)."""
    if any(t.prompt_format == "chat" for t in task.spec.templates) and not getattr(
        backend, "supports_chat", False
    ):
        raise _no_chat_template(task, backend.identity.name)


def _no_chat_template(task: Task, model: str) -> HakariInputError:
    """The one refusal for chat templates on a model without a chat template, naming the
    first such template and where it says chat (a space level or its own field)."""
    templates = task.spec.templates
    i, chat = next((i, t) for i, t in enumerate(templates) if t.prompt_format == "chat")
    field = (
        f"templates[{i}].prompt_format" if chat.levels is None else "space.dimensions.prompt_format"
    )
    return HakariInputError(
        f"task {task.name}: template {chat.id} goes in as chat messages (its `prompt_format` "
        f"is chat), which needs a chat template; model {model} has none",
        file=str(task.path),
        field=field,
    )


def request_needs(decodings: Sequence[Decoding]) -> Needs:
    """What the decodings ask of a backend: constrained decoding a regex, loglik
    log-likelihoods (greedy: plain generation)."""
    return Needs(regex="constrained" in decodings, loglik="loglik" in decodings)


def generation_request(rp: RenderedPrompt, decoding: Decoding, use_chat: bool) -> GenerationRequest:
    constrained = decoding == "constrained"
    return GenerationRequest(
        prompt=rp.text,
        messages=messages(rp, use_chat),
        max_new_tokens=rp.max_new_tokens,
        max_new_chars=rp.max_new_chars,
        stop=() if constrained else rp.stop,
        regex=rp.regex if constrained else None,
        stop_after=None if constrained else rp.decided_stop,
    )


def loglik_outputs(
    chunk: list[RenderedPrompt],
    ctx: ModelContext,
    advance: Callable[[int], Any],
    from_cache: Callable[[int], Any] | None = None,
) -> tuple[list[str], int]:
    """The verbalisation with the highest log-likelihood, as if the model had said it."""
    requests = []
    for rp in chunk:
        assert rp.answers is not None
        requests.append(
            LoglikRequest(
                prompt=rp.text,
                continuations=tuple(rp.answers),
                messages=messages(rp, ctx.use_chat),
            )
        )
    run = ctx.run
    results, n_new = cached_loglik(
        ctx.backend,
        requests,
        run.cache,
        batch_size=run.load.batch_size,
        on_progress=advance,
        on_cached=from_cache,
    )
    outputs = []
    for req, res in zip(requests, results, strict=True):
        best = max(range(len(req.continuations)), key=lambda i: res.logprobs[i])
        outputs.append(req.continuations[best])
    return outputs, n_new
