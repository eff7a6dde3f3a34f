"""`hakari analyze RUN_DIR --judge SPEC`: IFTEval's automatic error analysis (seed 003 B.4).

For each model × task × decoding of a finished run, the lowest-scoring samples go to a
judge with the paper's prompt ("The following is a series of predictions a ... model got
wrong. Can you spot any patterns ...?"); its free-text answer is stored with the run in
`analysis.json` (with the sample indices, the prompt version and the rendered prompt's
hash). "Lowest-scoring": by a per-sample score in `scores` (`--metric`, e.g. after
`hakari score RUN_DIR --metrics f1`), else the samples whose answer differs from the gold,
in file order. Every example field is fenced and neutralised: a sample's output cannot
end the list of examples. Calls go through the response cache.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from hakari import judges
from hakari._util import checks
from hakari._util.atomic import ANALYSIS_FILE, Output, write_json_atomic
from hakari.backends import registry
from hakari.backends.cache import ResponseCache
from hakari.errors import HakariInputError
from hakari.judges import Judge, load_prompt
from hakari.rescore.common import ANALYSIS_PROMPT, JudgeOptions, judge_progress
from hakari.rescore.run_dir import read_run
from hakari.runner.rundir import locked_run_folder


def _is_wrong(sample: dict[str, Any]) -> bool:
    gold, answer = sample.get("gold"), sample.get("answer")
    if isinstance(gold, list):
        return answer not in gold
    return bool(answer != gold)


def select_low(
    samples: list[dict[str, Any]], metric: str | None, n: int
) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for s in samples:
        groups[(s["model"], s["task"], s["decoding"])].append(s)
    chosen = {}
    for key, rows in groups.items():
        if metric is not None:
            scored = [r for r in rows if isinstance(r.get("scores", {}).get(metric), int | float)]
            picked = sorted(scored, key=lambda r: r["scores"][metric])[:n]
        else:
            picked = [r for r in rows if _is_wrong(r)][:n]
        if picked:
            chosen[key] = picked
    return chosen


def analyze_run(
    run_dir: Path,
    judge: JudgeOptions,
    *,
    metric: str | None = None,
    n: int = 5,
    max_chars: int = 1500,
) -> dict[str, Any]:
    checks.integer(n, "--n", low=1)
    judge.check()
    if not run_dir.is_dir():
        raise HakariInputError("not a run folder", file=str(run_dir))
    with locked_run_folder(run_dir, "RUN_DIR"):
        return _analyze_run(run_dir, judge, metric=metric, n=n, max_chars=max_chars)


def _analyze_run(
    run_dir: Path, judge: JudgeOptions, *, metric: str | None, n: int, max_chars: int
) -> dict[str, Any]:
    _, samples = read_run(run_dir)
    if metric is not None and not any(metric in s.get("scores", {}) for s in samples):
        raise HakariInputError(
            f"no sample has a {metric!r} score: "
            f"run `hakari score {run_dir} --metrics {metric}` first",
            field="--metric",
        )
    prompt = load_prompt(judge.prompt or ANALYSIS_PROMPT)
    if prompt.kind != "analysis" or prompt.example is None:
        raise HakariInputError(
            f"{judge.prompt or ANALYSIS_PROMPT} ({prompt.tag}) is a {prompt.kind} scoring prompt, "
            f"not an error-analysis prompt (built-in: {ANALYSIS_PROMPT})",
            field="--judge-prompt",
        )
    registry.check_spec(judge.spec, dtype=judge.dtype, device=judge.device)
    chosen = select_low(samples, metric, n)
    rendered = []
    for (_, task, _), rows in chosen.items():
        examples = "\n".join(
            prompt.render(
                {
                    "prompt": _clip(r["prompt"], max_chars),
                    "response": _clip(r["output"], max_chars),
                    "reference": _clip(str(r["gold"]), max_chars),
                },
                template=prompt.example,
            )
            for r in rows
        )
        # The examples are already neutralised; the task name is the run's own.
        rendered.append(prompt.template.replace("{{task}}", task).replace("{{examples}}", examples))
    backend = judges.load_judge_backend(
        judge.spec, device=judge.device, dtype=judge.dtype, cache_dir=judge.cache_dir
    )
    cache = ResponseCache.in_dir(judge.cache_dir) if judge.use_cache else None
    try:
        runner = Judge(
            backend,
            prompt,
            cache,
            max_reasks=0,
            batch_size=judge.batch_size,
            max_new_tokens=judge.max_new_tokens,
            prompt_format=judge.prompt_format,
        )
        with judge_progress(judge.progress) as advance:
            runner.on_progress = advance
            answers = runner.ask(rendered)
        counts = {"generated": runner.generated, "cached": runner.cached}
    finally:
        backend.close()
        if cache is not None:
            cache.close()
    entries = []
    for ((model, task, decoding), rows), asked in zip(chosen.items(), answers, strict=True):
        entries.append(
            {
                "model": model,
                "task": task,
                "decoding": decoding,
                "selection": f"lowest {metric}" if metric else "answer differs from gold",
                "samples": [
                    {"template_id": r["template_id"], "index": r.get("index")} for r in rows
                ],
                "judge": backend.identity.name,
                "prompt": prompt.tag,
                "prompt_sha256": asked.prompt_sha256,
                "answer": asked.output,
                "status": "answered" if asked.verdict.ok else "unanswered",
                "reason": asked.verdict.reason,
            }
        )
    result = {"analyses": entries, **counts}
    write_json_atomic(Output(run_dir / ANALYSIS_FILE, "RUN_DIR", owner=True), result)
    return result


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-limit:]
