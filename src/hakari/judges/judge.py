"""LLM-as-a-judge through any `hakari.backends.base.Backend`, with the response cache.

What a reader must know:

* **Every call goes through `hakari.backends.cache.cached_generate`**, keyed by the judge model's
  identity, the exact rendered prompt and the decoding settings: a rerun asks nothing new,
  and a killed run keeps every verdict already received.
* **Strict verdicts** (`hakari.judges.parse`). An unreadable verdict is re-asked at most
  `max_reasks` times (the judge sees its answer and the reason); what is still unreadable
  is *unscored* with its reason: counted and reported, never 0, never dropped.
* **Pair prompts are judged in both orders** (prediction as response 1, then as response
  2). The prediction's score is the mean of its two scores; the preference (win / loss /
  tie against the reference) is kept only when both orders agree, else it is a tie and
  the item counts as inconsistent. An item is scored only when both orders are.
* **Provenance.** Each score carries the prompt file's id@version and the sha256 of the
  exact text the judge saw (per order for pairs).

Greedy decoding (temperature 0). A model without a chat template (a base model) gets the
prompt as a completion followed by the prompt file's `completion_prefix` (e.g.
`Rating: [[`), which is put back in front of its output before parsing.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hakari.backends.base import Backend, GenerationRequest, Message
from hakari.backends.cache import ResponseCache, cached_generate
from hakari.errors import HakariInputError
from hakari.judges.parse import ParsedVerdict, parse_verdict
from hakari.judges.prompts import JudgePrompt


@dataclass(frozen=True)
class JudgeItem:
    prompt: str
    prediction: str
    reference: str | None = None


@dataclass
class Asked:
    """One rendered prompt's final outcome after any re-asks."""

    verdict: ParsedVerdict
    output: str
    asks: int
    prompt_sha256: str


@dataclass
class JudgeScore:
    value: float | None
    reason: str | None
    prompt: str
    prompt_sha256: str | dict[str, str]
    asks: int
    outputs: list[str]
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return "scored" if self.value is not None else "unscored"

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "status": self.status,
            "reason": self.reason,
            "prompt": self.prompt,
            "prompt_sha256": self.prompt_sha256,
            "asks": self.asks,
            "outputs": self.outputs,
            **self.detail,
        }


@dataclass
class JudgeRun:
    scores: list[JudgeScore]
    summary: dict[str, Any]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Judge:
    def __init__(
        self,
        backend: Backend,
        prompt: JudgePrompt,
        cache: ResponseCache | None,
        *,
        max_reasks: int = 2,
        batch_size: int = 8,
        max_new_tokens: int | None = None,
        prompt_format: str = "auto",
    ) -> None:
        if max_reasks < 0:
            raise HakariInputError("must be 0 or more", field="--judge-reasks")
        self.backend = backend
        self.prompt = prompt
        self.cache = cache
        self.max_reasks = max_reasks
        self.batch_size = batch_size
        supports_chat = bool(getattr(backend, "supports_chat", False))
        if prompt_format == "chat" and not supports_chat:
            raise HakariInputError(
                f"judge {backend.identity.name} has no chat template", field="--prompt-format"
            )
        self.use_chat = prompt_format == "chat" or (prompt_format == "auto" and supports_chat)
        default_tokens = prompt.max_new_tokens
        if not self.use_chat and prompt.completion_prefix and prompt.completion_max_new_tokens:
            default_tokens = prompt.completion_max_new_tokens
        self.max_new_tokens = max_new_tokens or default_tokens
        self.generated = 0
        self.cached = 0
        self.on_progress: Callable[[int], None] | None = None  # calls answered, as they come

    # ------------------------------------------------------------------ requests

    def _prefix(self) -> str:
        return "" if self.use_chat else self.prompt.completion_prefix

    def _first_request(self, rendered: str) -> GenerationRequest:
        if self.use_chat:
            return GenerationRequest(
                prompt=rendered,
                messages=(Message("user", rendered),),
                max_new_tokens=self.max_new_tokens,
                stop=(),
            )
        return GenerationRequest(
            prompt=rendered + self._prefix(), max_new_tokens=self.max_new_tokens, stop=()
        )

    def _reask_request(
        self, previous: GenerationRequest, output: str, reason: str
    ) -> GenerationRequest:
        note = self.prompt.reask.format(reason=reason)
        if self.use_chat and previous.messages is not None:
            messages = (
                *previous.messages,
                Message("assistant", output),
                Message("user", note),
            )
            return GenerationRequest(
                prompt=previous.prompt,
                messages=messages,
                max_new_tokens=self.max_new_tokens,
                stop=(),
            )
        text = f"{previous.prompt}{output}\n\n{note}\n{self._prefix()}"
        return GenerationRequest(prompt=text, max_new_tokens=self.max_new_tokens, stop=())

    def _generate(self, requests: list[GenerationRequest]) -> list[str]:
        results, n_new = cached_generate(
            self.backend,
            requests,
            self.cache,
            batch_size=self.batch_size,
            on_progress=self.on_progress,
        )
        self.generated += n_new
        self.cached += len(requests) - n_new
        return [r.text for r in results]

    def ask(self, rendered: Sequence[str]) -> list[Asked]:
        """Each rendered prompt to the judge, re-asking unreadable verdicts."""
        requests = [self._first_request(text) for text in rendered]
        hashes = [sha256(self.backend.render_prompt(r)) for r in requests]
        outputs = self._generate(requests)
        prefix = self._prefix()
        done: list[Asked] = [
            Asked(self._parse(prefix + out), out, 1, h)
            for out, h in zip(outputs, hashes, strict=True)
        ]
        current = list(requests)
        for _ in range(self.max_reasks):
            todo = [i for i, a in enumerate(done) if not a.verdict.ok]
            if not todo or self.prompt.verdict == "free_text" or not self.prompt.reask:
                break
            follow = [
                self._reask_request(current[i], done[i].output, done[i].verdict.reason or "")
                for i in todo
            ]
            for j, (i, out) in enumerate(zip(todo, self._generate(follow), strict=True)):
                current[i] = follow[j]
                done[i] = Asked(self._parse(prefix + out), out, done[i].asks + 1, hashes[i])
        return done

    def _parse(self, text: str) -> ParsedVerdict:
        if self.prompt.verdict == "free_text":
            return ParsedVerdict((0.0,)) if text.strip() else ParsedVerdict(None, "empty output")
        return parse_verdict(text, self.prompt.verdict, self.prompt.scale)

    # ------------------------------------------------------------------ scoring

    def _values(self, item: JudgeItem, first: str, second: str) -> dict[str, str]:
        needs = self.prompt.kind == "pair" or (
            "reference" in self.prompt.fields() and "reference" not in self.prompt.optional
        )
        if item.reference is None and needs:
            raise HakariInputError(
                f"judge prompt {self.prompt.tag} needs a reference for every item",
                field="--reference-field",
            )
        return {
            "prompt": item.prompt,
            "reference": "(none given)" if item.reference is None else item.reference,
            "response": item.prediction,
            "response1": first,
            "response2": second,
        }

    def score(self, items: Sequence[JudgeItem]) -> JudgeRun:
        if self.prompt.kind == "pair":
            scores = self._score_pairs(items)
        elif self.prompt.kind == "single":
            scores = self._score_single(items)
        else:
            raise HakariInputError(
                f"{self.prompt.tag} is not a scoring prompt", field="--judge-prompt"
            )
        return JudgeRun(scores, self._summary(scores))

    def _score_single(self, items: Sequence[JudgeItem]) -> list[JudgeScore]:
        rendered = [
            self.prompt.render(self._values(it, it.prediction, it.reference or "")) for it in items
        ]
        out = []
        for asked in self.ask(rendered):
            value = asked.verdict.values[0] if asked.verdict.values else None
            out.append(
                JudgeScore(
                    value,
                    asked.verdict.reason,
                    self.prompt.tag,
                    asked.prompt_sha256,
                    asked.asks,
                    [asked.output],
                )
            )
        return out

    def _score_pairs(self, items: Sequence[JudgeItem]) -> list[JudgeScore]:
        forward = [
            self.prompt.render(self._values(it, it.prediction, it.reference or "")) for it in items
        ]
        backward = [
            self.prompt.render(self._values(it, it.reference or "", it.prediction)) for it in items
        ]
        asked = self.ask(forward + backward)
        first, second = asked[: len(items)], asked[len(items) :]
        return [_pair_score(self.prompt.tag, a, b) for a, b in zip(first, second, strict=True)]

    def _summary(self, scores: Sequence[JudgeScore]) -> dict[str, Any]:
        n = len(scores)
        unscored = [s for s in scores if s.value is None]
        reasons = Counter(s.reason for s in unscored)
        summary: dict[str, Any] = {
            "judge": self.backend.identity.name,
            "judge_identity": {k: str(v) for k, v in vars(self.backend.identity).items()},
            "prompt": self.prompt.tag,
            "prompt_file_sha256": self.prompt.sha256,
            "mode": "chat" if self.use_chat else "completion",
            "n": n,
            "n_scored": n - len(unscored),
            "n_unscored": len(unscored),
            "unscored_rate": len(unscored) / n if n else 0.0,
            "unscored_reasons": dict(reasons.most_common()),
            "generated": self.generated,
            "cached": self.cached,
            "max_reasks": self.max_reasks,
            "reasked": sum(1 for s in scores if s.asks > (2 if self.prompt.kind == "pair" else 1)),
        }
        if self.prompt.kind == "pair":
            both = [s for s in scores if s.value is not None]
            flips = sum(1 for s in both if not s.detail.get("consistent", True))
            summary["n_both_orders"] = len(both)
            summary["inconsistent"] = flips
            summary["inconsistency_rate"] = flips / len(both) if both else None
        return summary


def _preference(pred: float, ref: float) -> str:
    return "win" if pred > ref else "loss" if pred < ref else "tie"


def _pair_score(tag: str, fwd: Asked, bwd: Asked) -> JudgeScore:
    """Prediction first (fwd: pred, ref) and second (bwd: ref, pred), combined."""
    hashes = {"prediction_first": fwd.prompt_sha256, "prediction_second": bwd.prompt_sha256}
    outputs = [fwd.output, bwd.output]
    asks = fwd.asks + bwd.asks
    if fwd.verdict.values is None or bwd.verdict.values is None:
        which = "prediction_first" if fwd.verdict.values is None else "prediction_second"
        reason = (fwd.verdict if fwd.verdict.values is None else bwd.verdict).reason
        return JudgeScore(None, f"{which}: {reason}", tag, hashes, asks, outputs)
    pred_a, ref_a = fwd.verdict.values
    ref_b, pred_b = bwd.verdict.values
    pref_a, pref_b = _preference(pred_a, ref_a), _preference(pred_b, ref_b)
    consistent = pref_a == pref_b
    detail = {
        "orders": {
            "prediction_first": {"prediction": pred_a, "reference": ref_a},
            "prediction_second": {"prediction": pred_b, "reference": ref_b},
        },
        "reference_score": (ref_a + ref_b) / 2,
        "preference": pref_a if consistent else "tie",
        "consistent": consistent,
    }
    return JudgeScore((pred_a + pred_b) / 2, None, tag, hashes, asks, outputs, detail)
