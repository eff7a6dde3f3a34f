"""What both re-scorers share: metric and judge options, scoring a list of samples, and
atomic file writes.

The order is always: validate names and inputs → load the judge prompt file → load every
model (metric models, then the judge backend) → score → write. A bad metric name or a bad
row therefore fails before any model loads, and a missing model fails before any work.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hakari import judges
from hakari._util import checks
from hakari._util.unicode import replaced
from hakari.backends import registry
from hakari.backends.base import check_prompt_format
from hakari.backends.cache import ResponseCache
from hakari.errors import HakariInputError
from hakari.judges import Judge, JudgeItem, load_prompt
from hakari.scoring.samples import MetricSuite, ScoringConfig

SCORING_PROMPT = "ifteval_pair"  # `hakari score --judge`'s default prompt
ANALYSIS_PROMPT = "error_analysis"  # `hakari analyze`'s


@dataclass(frozen=True)
class JudgeOptions:
    spec: str
    prompt: str | None = None  # a built-in id or a .yaml file; None: the command's default
    max_reasks: int = 2
    batch_size: int = 8
    max_new_tokens: int | None = None
    prompt_format: str = "auto"
    cache_dir: Path | None = None
    use_cache: bool = True
    device: str = "auto"
    dtype: str | None = None  # None: the backend's default (fp32 in-process, vLLM's auto)
    progress: bool = False  # a rich progress line of judge calls (the CLI turns it on)

    def check(self) -> None:
        """The numbers in range and the prompt format known, before any file is read."""
        checks.integer(self.max_reasks, "--judge-reasks", low=0, high=100)
        checks.integer(self.batch_size, "--batch-size", low=1)
        checks.optional_integer(self.max_new_tokens, "--judge-max-tokens", low=1, high=32768)
        check_prompt_format(self.prompt_format)


@dataclass
class SampleScores:
    """Per-sample scores (None = unscored) and judge details, plus run-level provenance."""

    values: dict[str, list[float | None]] = field(default_factory=dict)
    judgements: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)


@contextmanager
def judge_progress(enabled: bool) -> Iterator[Callable[[int], None] | None]:
    """A transient rich progress line counting judge answers (cached ones included)."""
    if not enabled:
        yield None
        return
    from rich.progress import MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("judge calls"), MofNCompleteColumn(), TimeElapsedColumn(), transient=True
    ) as progress:
        task = progress.add_task("judge", total=None)
        yield lambda n: progress.advance(task, n)


def judge_metric_name(prompt_id: str) -> str:
    return f"judge_{prompt_id}"


def prepare_suite(
    metrics: Sequence[str], config: ScoringConfig, *, has_prompts: bool
) -> MetricSuite | None:
    """Validated metric names and their scorers (no model loaded), or None for none."""
    config.check()
    if not metrics:
        return None
    return MetricSuite(metrics, config, has_prompts=has_prompts)


def score_samples(
    suite: MetricSuite | None,
    judge_options: JudgeOptions | None,
    predictions: Sequence[str],
    references: Sequence[Any],
    prompts: Sequence[str] | None,
) -> SampleScores:
    """Every metric and the judge over the samples (models loaded first, once each)."""
    if suite is None and judge_options is None:
        raise HakariInputError(
            "nothing to compute: give --metrics and/or --judge", field="--metrics"
        )
    if judge_options is not None:
        judge_options.check()
    judge_prompt = load_prompt(judge_options.prompt or SCORING_PROMPT) if judge_options else None
    if judge_prompt is not None and judge_prompt.kind == "analysis":
        raise HakariInputError(
            f"{judge_prompt.tag} is for `hakari analyze`, not a scoring prompt",
            field="--judge-prompt",
        )
    if judge_prompt is not None and prompts is None and "prompt" in judge_prompt.fields():
        raise HakariInputError(
            f"judge prompt {judge_prompt.tag} shows the instruction: give --prompt-field",
            field="--prompt-field",
        )
    if judge_options is not None:
        # A typo in --judge fails here, before any metric model loads.
        registry.check_spec(
            judge_options.spec, dtype=judge_options.dtype, device=judge_options.device
        )
    # Models and metrics get text they can encode; the rows keep theirs exactly.
    predictions = [replaced(p) for p in predictions]
    references = [_replaced_reference(r) for r in references]
    prompts = [replaced(p) for p in prompts] if prompts is not None else None
    out = SampleScores()
    if suite is not None:
        suite.prepare()
        scored = suite.score(predictions, references, prompts)
        out.values.update({k: list(v) for k, v in scored.values.items()})
        out.provenance["metrics"] = {"models": scored.models, "seconds": scored.seconds}
    if judge_options is not None and judge_prompt is not None:
        backend = judges.load_judge_backend(
            judge_options.spec,
            device=judge_options.device,
            dtype=judge_options.dtype,
            cache_dir=judge_options.cache_dir,
        )
        cache = ResponseCache.in_dir(judge_options.cache_dir) if judge_options.use_cache else None
        try:
            judge = Judge(
                backend,
                judge_prompt,
                cache,
                max_reasks=judge_options.max_reasks,
                batch_size=judge_options.batch_size,
                max_new_tokens=judge_options.max_new_tokens,
                prompt_format=judge_options.prompt_format,
            )
            items = [
                JudgeItem(
                    prompt=prompts[i] if prompts is not None else "",
                    prediction=predictions[i],
                    reference=_first(references[i]),
                )
                for i in range(len(predictions))
            ]
            with judge_progress(judge_options.progress) as advance:
                judge.on_progress = advance
                run = judge.score(items)
        finally:
            backend.close()
            if cache is not None:
                cache.close()
        name = judge_metric_name(judge_prompt.id)
        out.values[name] = [s.value for s in run.scores]
        out.judgements[name] = [s.to_dict() for s in run.scores]
        out.provenance["judge"] = run.summary
    return out


def _replaced_reference(reference: Any) -> Any:
    if isinstance(reference, str):
        return replaced(reference)
    if isinstance(reference, list):
        return [replaced(r) if isinstance(r, str) else r for r in reference]
    return reference


def _first(reference: str | list[str] | None) -> str | None:
    if reference is None or isinstance(reference, str):
        return reference
    return reference[0]


def reference_text(gold: Any) -> str | list[str]:
    """A run sample's gold as a reference: strings and lists of strings as they are."""
    if isinstance(gold, list) and gold and all(isinstance(g, str) for g in gold):
        return list(gold)
    return gold if isinstance(gold, str) else json.dumps(gold, ensure_ascii=False)


def merged_scores(row: dict[str, Any], new: dict[str, Any], where: str) -> dict[str, Any]:
    old = row.get("scores", {})
    if not isinstance(old, dict):
        raise HakariInputError(f"{where}: field 'scores' exists and is not an object")
    return {**old, **new}
