"""The engine side of the vLLM backend: one `vllm.LLM` (`VLLMEngine`, in this process or a
Ray actor per data-parallel rank), its outputs as plain data (`Raw`), and starting the
engines."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hakari.backends.base import (
    GenerationRequest,
)
from hakari.errors import ModelLoadError


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
        lora: tuple[str, int, str] | None,
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

    def score(
        self, rows: list[tuple[list[int], int]], lora: tuple[str, int, str] | None
    ) -> list[tuple[float, int]]:
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
    def _lora(lora: tuple[str, int, str] | None) -> Any:
        if lora is None:
            return None
        from vllm.lora.request import LoRARequest

        return LoRARequest(lora[0], lora[1], lora[2])


def start_engines(kwargs: dict[str, Any], data_parallel_size: int) -> tuple[list[Any], bool]:
    """One in-process engine, or one Ray actor per data-parallel rank (`RAY_ADDRESS`
    joins a running cluster)."""
    try:
        if data_parallel_size == 1:
            return [VLLMEngine(kwargs)], False
        try:
            import ray
        except ImportError:
            raise ModelLoadError(
                "--data-parallel-size needs Ray: pip install ray", field="--data-parallel-size"
            ) from None
        if not ray.is_initialized():
            ray.init(address=os.environ.get("RAY_ADDRESS"))
        actor = ray.remote(VLLMEngine)
        return [actor.remote(kwargs) for _ in range(data_parallel_size)], True
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelLoadError(f"vLLM cannot load {kwargs['model']}: {exc}", field="model") from exc
