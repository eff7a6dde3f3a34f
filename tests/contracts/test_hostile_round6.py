"""Hostile round six (issue 43's open items): what a native run, its statistics and its
engine settings must not do silently or unboundedly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend
from hakari.reports.markdown import markdown_report
from hakari.results import EvalResults
from hakari.runner import evaluate

STS_TASK = """\
name: sts_stub
language: en
description: Two number templates, one of which always answers 2.5.
target: label
answer_type: number
fallback: {kind: number, value: 2.0}
metrics: [pearson]
max_new_chars: 8
templates:
  - id: 0-0
    prompt: "Rate {text}. Answer:"
    regex: "[0-5](\\\\.[0-9])?"
  - id: 1-0
    prompt: "How similar is {text}? Answer:"
    regex: "[0-5](\\\\.[0-9])?"
data:
  instances:
    - {text: a, label: 0.0}
    - {text: b, label: 1.0}
    - {text: c, label: 3.0}
    - {text: d, label: 5.0}
"""


def _stub_run(tmp_path: Path, task: Path, respond: Any, **options: Any) -> EvalResults:
    """`task` on a stand-in model answering with `respond`, into tmp_path / "run"."""
    return evaluate(
        models=["stub"],
        tasks=[str(task)],
        decodings=["greedy"],
        cache_dir=tmp_path / "cache",
        output_dir=tmp_path / "run",
        backend_factory=lambda spec: FakeBackend(respond, name=spec),
        **options,
    )


def test_a_native_template_with_a_constant_answer_is_named_not_averaged_silently(
    tmp_path: Path,
) -> None:
    """Item 18 for native runs: a template that answers one value has no Pearson
    (undefined); it is counted 0.0 in the mean and the Sharpe score, and now results.json
    (`undefined`) and every report view name it, as an import's notes did."""
    task = tmp_path / "sts_stub.yaml"
    task.write_text(STS_TASK, encoding="utf-8")
    golds = {"a": "0.0", "b": "1.0", "c": "3.0", "d": "5.0"}

    def respond(request: GenerationRequest) -> str:
        if request.prompt.startswith("How similar"):
            return "2.5"
        return golds[request.prompt.split()[1].rstrip(".")]

    results = _stub_run(tmp_path, task, respond, n_boot=0)
    dec = results.models["stub"].tasks["sts_stub"].decodings["greedy"]
    assert dec.templates["1-0"].metrics["pearson"] == 0.0
    assert dec.undefined == {"pearson": {"1-0": "constant_predictions"}}
    doc = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    written = doc["models"]["stub"]["tasks"]["sts_stub"]["decodings"]["greedy"]
    assert written["undefined"] == {"pearson": {"1-0": "constant_predictions"}}
    read = EvalResults.read(tmp_path / "run" / "results.json")
    text = " ".join(markdown_report(read).split())
    assert "pearson is undefined for template '1-0'" in text
    assert "counted as 0.0" in text


def test_a_run_of_more_models_than_the_pairwise_bound_is_refused_before_any_load(
    tmp_path: Path,
) -> None:
    """Item 7, the rest: every pair of models is compared (K² pairs); beyond the bound a
    run with a bootstrap is refused in one line naming --model before any model loads."""
    from hakari.errors import HakariInputError
    from hakari.runner.estimators import MAX_COMPARED_MODELS

    def no_load(spec: str) -> FakeBackend:
        raise AssertionError("a model loaded")

    models = [f"m{k}" for k in range(MAX_COMPARED_MODELS + 1)]
    with pytest.raises(HakariInputError, match="at most") as caught:
        evaluate(
            models=models,
            tasks=["demo_sentiment_en"],
            limit=2,
            cache_dir=tmp_path / "cache",
            output_dir=tmp_path / "run",
            backend_factory=no_load,
        )
    assert caught.value.field == "--model" and "\n" not in str(caught.value)
    assert not (tmp_path / "run").exists()


def test_the_step_down_is_the_one_max_per_hypothesis_it_replaced() -> None:
    """Item 7: the Romano-Wolf step-down took a max over the hypotheses still standing
    for each hypothesis (pairs² = models⁴ work); the running max gives the same p-values."""
    import numpy as np

    from hakari.aggregate.intervals import Replicates
    from hakari.aggregate.multiple import adjust

    rng = np.random.default_rng(0)
    n_pairs, n_boot = 45, 400
    reps = []
    for h in range(n_pairs):
        values = rng.normal(0.02 * (h % 7), 0.05, n_boot)
        reps.append(
            Replicates(
                point=float(values.mean() + 0.01 * (h % 3)),
                point_se=0.05,
                values=values,
                values_se=np.full(n_boot, 0.05),
                instance_values=rng.normal(0.0, 0.01, n_boot),
            )
        )
    tests = adjust([(f"a{h}", f"b{h}") for h in range(n_pairs)], reps, [0.5] * n_pairs)
    t_obs, stars = [], []
    for r in reps:
        se_hat, _ = r.pivots()
        se_star = np.sqrt(r.values_se**2 + float(np.var(r.instance_values)))
        stars.append(np.abs((r.values - r.point) / se_star))
        t_obs.append(abs(r.point) / se_hat)
    order = np.argsort(-np.asarray(t_obs), kind="stable")
    expected, running = np.empty(n_pairs), 0.0
    for rank, h in enumerate(order):
        max_star = np.vstack(stars)[order[rank:]].max(axis=0)
        running = max(running, (1 + np.count_nonzero(max_star >= t_obs[h])) / (n_boot + 1))
        expected[h] = min(1.0, running)
    assert [t.p_romano_wolf for t in tests] == list(expected)


# -- 5a: the test tiers and hakari's thread rule under hostile environments ------------


def _cpus() -> int:
    from hakari.backends.cpu import usable_cpus

    return usable_cpus()


def test_omp_num_threads_is_read_as_openmp_reads_it(monkeypatch) -> None:
    """`OMP_NUM_THREADS=²` made `hakari run` raise ValueError (`"²".isdigit()` is true,
    `int("²")` fails); `٣` was taken as 3 where OpenMP ignores it; a nested list `4,2`
    was ignored where OpenMP takes 4."""
    import os

    from hakari.backends.cpu import default_threads

    machine = max(os.cpu_count() or 1, _cpus())
    cases = {
        "abc": _cpus(),
        "0": _cpus(),
        "-1": _cpus(),
        "²": _cpus(),
        "٣": _cpus(),
        "": _cpus(),
        " 1 ": 1,
        "4,2": min(4, machine),
        "99999999999999999999": machine,
    }
    for value, expected in cases.items():
        monkeypatch.setenv("OMP_NUM_THREADS", value)
        assert default_threads() == expected, value


def test_the_suite_s_default_workers_honour_xdist_s_override(monkeypatch) -> None:
    """`PYTEST_XDIST_AUTO_NUM_WORKERS=1` (xdist's own knob) was ignored by the suite's
    default `-n`: a worker a CPU all the same; a value that is not a count still is."""
    from tests.helpers.workers import MAX_WORKERS, default_workers

    for value, expected in {
        "1": 1,
        "0": 0,
        "3": 3,
        "abc": min(_cpus(), MAX_WORKERS),
        "-1": min(_cpus(), MAX_WORKERS),
    }.items():
        monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", value)
        assert default_workers() == expected, value


def test_a_worker_with_an_unusable_omp_num_threads_computes_with_one_thread(
    monkeypatch,
) -> None:
    """A worker kept `OMP_NUM_THREADS=abc` (or 0, -1), so hakari's rule gave each of two
    workers every CPU; a usable count is the user's and stays."""
    import os

    from hakari.backends.cpu import default_threads
    from tests.helpers.workers import pin_worker_threads

    for value, expected in {"abc": "1", "0": "1", "-1": "1", "2": "2"}.items():
        monkeypatch.setenv("OMP_NUM_THREADS", value)
        pin_worker_threads()
        assert os.environ["OMP_NUM_THREADS"] == expected, value
    monkeypatch.setenv("OMP_NUM_THREADS", "abc")
    pin_worker_threads()
    assert default_threads() == 1


# -- 5b: the transformers engine's batch sizing --------------------------------------


def test_a_pass_cost_the_timer_could_not_see_counts_the_floor() -> None:
    """A timer too coarse to see a pass gave 0 ms for both parts, counted as the ceiling
    (4,096 tokens a pass: huge flushes); NaN or infinity raised from `round`."""
    import math

    from hakari.backends.hf.passcost import MAX_PASS_TOKENS, MIN_PASS_TOKENS, PassCost

    assert PassCost(0.0, 0.0).pass_tokens == MIN_PASS_TOKENS
    assert PassCost(math.nan, 0.01).pass_tokens == MIN_PASS_TOKENS
    assert PassCost(math.inf, 0.01).pass_tokens == MIN_PASS_TOKENS
    assert PassCost(1.0, math.nan).pass_tokens == MIN_PASS_TOKENS
    assert PassCost(-1.0, 0.01).pass_tokens == MIN_PASS_TOKENS
    assert PassCost(5.0, 0.0).pass_tokens == MAX_PASS_TOKENS  # every ms is the fixed part
    assert PassCost(5.0, -0.1).pass_tokens == MAX_PASS_TOKENS
    assert PassCost(5.0, 0.01).pass_tokens == 1024  # 2 × 5 / 0.01 = 1000


def test_measuring_with_a_coarse_timer_counts_the_floor(monkeypatch) -> None:
    import torch

    from hakari.backends.hf import passcost

    class Step:
        def extend(self, *args: object, **kwargs: object) -> None:
            return None

    monkeypatch.setattr(passcost.time, "perf_counter", lambda: 1000.0)
    cost = passcost.measure_pass_cost(Step(), torch.device("cpu"), 100)  # type: ignore[arg-type]
    assert cost.pass_tokens == passcost.MIN_PASS_TOKENS


@pytest.mark.slow
def test_batch_sizes_out_of_range_are_refused_in_one_line(tiny_random_backend) -> None:
    """`batch_size=0` silently meant the default; a negative one made one batch of every
    prompt (the decode pool's row bound negative); a huge one a prefill of every prompt at
    once. The backend checks what it is given as the run's preflight does."""
    from hakari.backends.base import MAX_BATCH_SIZE, GenerationRequest, LoglikRequest
    from hakari.errors import HakariInputError

    gen = [GenerationRequest(prompt="Hello", max_new_tokens=2)]
    ll = [LoglikRequest(prompt="Hello", continuations=(" world",))]
    for size in (0, -1, MAX_BATCH_SIZE + 1, 10**9):
        backend = tiny_random_backend
        for call, requests in ((backend.generate, gen), (backend.loglik, ll)):
            with pytest.raises(HakariInputError, match="--batch-size") as caught:
                call(requests, batch_size=size)
            assert "\n" not in str(caught.value)
    assert len(tiny_random_backend.generate(gen, batch_size=MAX_BATCH_SIZE)) == 1


@pytest.mark.slow
def test_no_requests_and_contexts_past_the_model_s_positions(tiny_random_backend) -> None:
    """Already fine, kept: an empty request list gives an empty answer list; a context
    longer than the model's 512 positions is cut to its last tokens (lm-eval's rule for
    log-likelihood, the prompt's end for generation), not an index error."""
    import math

    from hakari.backends.base import GenerationRequest, LoglikRequest

    assert tiny_random_backend.generate([]) == []
    assert tiny_random_backend.loglik([]) == []
    long = "word " * 2000
    [got] = tiny_random_backend.loglik([LoglikRequest(prompt=long, continuations=(" end",))])
    assert all(math.isfinite(v) for v in got.logprobs)
    [answer] = tiny_random_backend.generate([GenerationRequest(prompt=long, max_new_tokens=3)])
    assert isinstance(answer.text, str)


def test_run_refuses_a_huge_batch_size_before_any_model_loads(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    """`--batch-size 1000000000` had no upper bound (a prefill of every prompt at once)."""
    from hakari.backends.base import MAX_BATCH_SIZE
    from tests.helpers.cli import assert_one_line, invoke

    size = str(MAX_BATCH_SIZE + 1)
    code, out = invoke("--limit", "2", "--batch-size", size, "--output", str(tmp_path / "r"))
    assert_one_line(code, out, "--batch-size", f"to {MAX_BATCH_SIZE}")
    assert not no_model_loads and not (tmp_path / "r").exists()


@pytest.mark.slow
def test_a_task_file_with_more_templates_than_the_bound_is_refused_before_any_load(
    tmp_path: Path, no_model_loads: list[str]
) -> None:
    """Item 7, the rest, for native runs: a task file's hand-written templates had no
    bound (a space's selection had 10,000); beyond it, one line naming the file."""
    from hakari.tasks.spacesample import MAX_TEMPLATES
    from tests.helpers.cli import assert_one_line, invoke

    head = STS_TASK.split("templates:")[0]
    lines = [head + "templates:"]
    for k in range(MAX_TEMPLATES + 1):
        lines += [
            f"  - id: {k}-0",
            f'    prompt: "Rate {{text}} ({k}). Answer:"',
            '    regex: "[0-5]"',
        ]
    lines.append("data:" + STS_TASK.split("data:")[1])
    task = tmp_path / "sts_stub.yaml"
    task.write_text("\n".join(lines), encoding="utf-8")
    code, out = invoke("--tasks", str(task), "--output", str(tmp_path / "r"))
    assert_one_line(code, out, "sts_stub.yaml", "field templates", f"{MAX_TEMPLATES + 1:,}")
    assert not no_model_loads and not (tmp_path / "r").exists()


def test_a_budgeted_template_with_a_constant_answer_is_named_too(tmp_path: Path) -> None:
    """Item 18 in a budgeted run: the completion fills the constant template's cells not
    run, so its Pearson is a number (0.108 here, before this check silent), resting on
    answers with no spread: named from the cells run, in results.json and the reports."""
    golds = {f"i{k}": (k * 7) % 51 / 10 for k in range(48)}
    items = "\n".join(f"    - {{text: {k}, label: {v:.1f}}}" for k, v in golds.items())
    rows = "".join(
        f'  - id: {t}-0\n    prompt: "T{t} Rate {{text}}. Answer:"\n'
        f'    regex: "[0-5](\\\\.[0-9])?"\n'
        for t in range(4)
    )
    head = STS_TASK.split("templates:")[0]
    task = tmp_path / "sts_stub.yaml"
    task.write_text(f"{head}templates:\n{rows}data:\n  instances:\n{items}\n", encoding="utf-8")

    def respond(request: GenerationRequest) -> str:
        template, text = request.prompt[1], request.prompt.split()[2].rstrip(".")
        return "2.5" if template == "1" else f"{golds[text]:.1f}"

    results = _stub_run(tmp_path, task, respond, n_boot=50, budget="2x")
    dec = results.models["stub"].tasks["sts_stub"].decodings["greedy"]
    assert dec.budget is not None and dec.budget.design.cells_run < 4 * 48
    assert dec.undefined == {"pearson": {"1-0": "constant_predictions_in_cells_run"}}
    read = EvalResults.read(tmp_path / "run" / "results.json")
    text = " ".join(markdown_report(read).split())
    assert "its answers in the cells run are one value" in text
    assert "fills the cells not run" in text
