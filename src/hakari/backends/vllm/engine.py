"""The engine side of the vLLM backend: one `vllm.LLM` (`VLLMEngine`, in this process or a
Ray actor per data-parallel rank), its outputs as plain data (`Raw`), a request's whole
answer on one engine (`answer_on`: the first ask, the re-ask, hakari's rules), and
starting the one engine of this process (`start_local`)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hakari.backends.base import GenerationRequest, GenerationResult
from hakari.backends.serving import (
    final_results,
    first_stops,
    reask_stops,
    to_reask,
)
from hakari.backends.vllm.startup import captured_stderr, failure_line
from hakari.errors import ModelLoadError

Lora = tuple[str, int, str] | None  # LoRARequest's (name, id, path), plain data


@dataclass(frozen=True)
class Raw:
    """What an engine returns for one prompt: plain data, so it crosses a Ray actor."""

    text: str
    finish: str
    eos: bool
    n_tokens: int


def raw_output(first: Any) -> Raw:
    """A `CompletionOutput` as plain data. vLLM's `stop_reason`: None at the EOS token, an
    integer at another end token of the model's generation_config (Gemma's
    <end_of_turn>), a string at a stop string; the first two are EOS."""
    finish = str(first.finish_reason)
    eos = finish == "stop" and not isinstance(first.stop_reason, str)
    return Raw(first.text, finish, eos, len(first.token_ids))


def sampling_kwargs(request: GenerationRequest, stops: Sequence[str]) -> dict[str, Any]:
    """`SamplingParams` arguments for a request (the regex separately: see `VLLMEngine`)."""
    return {
        "n": 1,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "top_k": max(request.top_k, 0),  # 0: all tokens
        "seed": request.seed,
        "max_tokens": request.max_new_tokens,
        "stop": list(stops) or None,
        "skip_special_tokens": True,
    }


class VLLMEngine:
    """One `vllm.LLM` and the calls hakari makes on it. Runs in this process, or inside a
    Ray actor per data-parallel rank (then its arguments and results are plain data)."""

    def __init__(self, llm_kwargs: dict[str, Any]) -> None:
        from vllm import LLM

        # vLLM may fork its workers: a forked child must not use the tokenizers
        # library's threads (a deadlock), and its warning when it turns them off would
        # land in hakari's output; a setting of the user's is kept
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.llm = LLM(**llm_kwargs)

    def dtype(self) -> str:
        """The dtype the engine runs in ("float32", "bfloat16", ...): vLLM's choice for
        `auto`."""
        return str(self.llm.llm_engine.model_config.dtype).removeprefix("torch.")

    def shutdown(self) -> None:
        """Stop the engine's processes now (else they live until garbage collection)."""
        core = getattr(self.llm.llm_engine, "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()

    def generate(
        self,
        prompts: list[list[int]],
        settings: list[dict[str, Any]],
        regexes: list[str | None],
        lora: Lora,
    ) -> list[Raw]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import StructuredOutputsParams

        params = [
            SamplingParams(
                **kwargs,
                structured_outputs=(
                    StructuredOutputsParams(regex=regex) if regex is not None else None
                ),
            )
            for kwargs, regex in zip(settings, regexes, strict=True)
        ]
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=ids) for ids in prompts],
            params,
            use_tqdm=False,
            lora_request=self._lora(lora),
        )
        return [raw_output(out.outputs[0]) for out in outputs]

    def score(self, rows: list[tuple[list[int], int]], lora: Lora) -> list[tuple[float, int]]:
        """Sum log-prob of ids[n_ctx:] given ids[:n_ctx], for each (ids, n_ctx)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=1, detokenize=False)
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=ids) for ids, _ in rows],
            params,
            use_tqdm=False,
            lora_request=self._lora(lora),
        )
        scores = []
        for (ids, n_ctx), out in zip(rows, outputs, strict=True):
            logprobs = out.prompt_logprobs
            total = sum(logprobs[pos][ids[pos]].logprob for pos in range(n_ctx, len(ids)))
            scores.append((float(total), len(ids) - n_ctx))
        return scores

    @staticmethod
    def _lora(lora: Lora) -> Any:
        if lora is None:
            return None
        from vllm.lora.request import LoRARequest

        return LoRARequest(lora[0], lora[1], lora[2])


def answer_on(
    engine: Any, items: list[tuple[list[int], GenerationRequest]], lora: Lora
) -> list[GenerationResult]:
    """Each (prompt ids, request)'s final answer from one engine: every request's first
    ask in one `generate`, the re-asks of answers cut inside their leading whitespace
    in a second (`hakari.backends.serving`), then hakari's output rules. Runs where the
    engine is (a Ray actor returns finished answers, so a rank's answers can be kept as
    it ends)."""
    prompts = [ids for ids, _ in items]
    requests = [request for _, request in items]

    def ask(positions: list[int], stops: list[tuple[str, ...]]) -> list[Raw]:
        settings = [sampling_kwargs(requests[i], s) for i, s in zip(positions, stops, strict=True)]
        return list(
            engine.generate(
                [prompts[i] for i in positions],
                settings,
                [requests[i].regex for i in positions],
                lora,
            )
        )

    everything = list(range(len(items)))
    raws = ask(everything, [first_stops(r) for r in requests])
    again = to_reask(requests, raws)
    if again:
        for i, raw in zip(
            again, ask(again, [reask_stops(requests[i]) or () for i in again]), strict=True
        ):
            raws[i] = raw
    return final_results(requests, raws)


def score_groups_on(
    engine: Any, groups: list[list[tuple[list[int], int]]], lora: Lora
) -> list[list[tuple[float, int]]]:
    """Each group's (log-prob sum, tokens) per (ids, n_ctx), all groups in one call."""
    flat = [row for group in groups for row in group]
    scores = iter(engine.score(flat, lora) if flat else [])
    return [[next(scores) for _ in group] for group in groups]


_ON_ENGINE: dict[str, Callable[[Any, list[Any], Lora], list[Any]]] = {
    "answer": answer_on,
    "score_groups": score_groups_on,
}


class LocalEngine:
    """The one engine of this process, behind the interface `RayEngines` has."""

    remote = False

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.served = 0

    def dtype(self) -> str:
        return str(self.engine.dtype())

    def run(
        self,
        method: str,
        items: list[Any],
        lora: Lora,
        on_done: Callable[[list[int], list[Any]], None] | None = None,
    ) -> list[Any]:
        values = list(_ON_ENGINE[method](self.engine, items, lora))
        self.served += len(items)
        if on_done is not None:
            on_done(list(range(len(items))), values)
        return values

    def record(self) -> dict[str, Any]:
        return {
            "data_parallel_size": 1,
            "dealt": "one engine in this process",
            "engines": [{"rank": 0, "host": socket.gethostname(), "dtype": self.dtype(),
                         "prompts": self.served}],
        }  # fmt: skip

    def close(self) -> None:
        self.engine.shutdown()


def start_local(kwargs: dict[str, Any]) -> LocalEngine:
    """The one engine of this process; a start that fails is one line with vLLM's root
    cause (`startup`)."""
    log: list[str] = []
    try:
        with captured_stderr(log):  # the root cause, not ~100 lines of it
            return LocalEngine(VLLMEngine(kwargs))
    except (OSError, ValueError, RuntimeError) as exc:
        line = failure_line(exc, log[1], Path(log[0])) if log else str(exc)
        raise ModelLoadError(
            f"vLLM cannot start {kwargs['model']}: {line}", field="--model"
        ) from exc
