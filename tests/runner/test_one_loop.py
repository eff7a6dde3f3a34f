"""One run loop (issue 23 §1, issue 27 §1, §2, §5): a budgeted and a sequential run are
as careful as the full run — the same counters in results.json, the same failure policy,
intervals in their quantity's range, a stopping rule that never acts on a degenerate
interval — and the Python API validates like the CLI."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hakari.aggregate.intervals import statistic_bounds
from hakari.backends.base import GenerationRequest
from hakari.backends.fake import FakeBackend, hash_choice
from hakari.backends.serving import ServingOptions
from hakari.errors import HakariInputError
from hakari.rescore.run_dir import score_run
from hakari.results import EvalResults
from hakari.runner import evaluate
from hakari.scoring import corpus
from hakari.scoring.samples import ScoringConfig
from tests.helpers.http_doubles import Reply, Seen, StubServer, completion
from tests.helpers.oracle import TASK

SECRET_KEY = "sk-one-loop-0123456789abcdefXYZ"
COUNTERS = ("refusals", "redacted_secrets", "unreadable_cache_rows", "unencodable_answers")


def _kind(prompt: str) -> int:
    return int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 5


def _hostile(seen: Seen) -> Reply:
    """Refuses some prompts (no text), reflects the API key in others, answers a lone
    surrogate in others; the rest are plain answers."""
    kind = _kind(str(seen.body.get("prompt")))
    if kind == 0:
        return Reply(body={"id": "c", "object": "text_completion",
                           "choices": [{"index": 0, "finish_reason": "stop"}]})  # fmt: skip
    if kind == 1:
        return Reply(body=completion(" positive " + seen.headers["authorization"]))
    if kind == 2:
        return Reply(body=completion(" negative \ud800"))
    return Reply(body=completion(" positive" if kind == 3 else " negative"))


@pytest.fixture
def server():
    stub = StubServer(_hostile)
    yield stub
    stub.close()


def _served(server: StubServer, cache: Path, **plan: Any) -> EvalResults:
    return evaluate(
        models=[f"openai:stub-model@{server.url}"],
        tasks=[TASK],
        decodings=["greedy"],
        limit=8,
        n_boot=200,
        cache_dir=cache,
        prompt_format="completion",
        serving=ServingOptions(max_attempts=2),
        **plan,
    )


def _corrupt_some_rows(cache: Path) -> int:
    with sqlite3.connect(cache / "responses.sqlite3") as conn:
        keys = sorted(k for (k,) in conn.execute("SELECT key FROM responses"))[::4]
        for key in keys:
            conn.execute("UPDATE responses SET payload = '{bad' WHERE key = ?", (key,))
    return len(keys)


@pytest.mark.slow
def test_budgeted_and_sequential_runs_count_like_the_full_run(
    server: StubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every counter of a full run is in results.json for the same cells run as a
    budget covering the grid and as a sequential run that goes to the full grid."""
    monkeypatch.setenv("HAKARI_API_KEY", SECRET_KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seed = tmp_path / "seed"
    _served(server, seed)
    assert _corrupt_some_rows(seed) > 0
    runs = {}
    for name, plan in {
        "full": {},
        "budgeted": {"budget": "1.0"},
        "sequential": {"target_ci": 1e-9},
    }.items():
        shutil.copytree(seed, tmp_path / name)  # the same cache state for each
        runs[name] = _served(server, tmp_path / name, output_dir=tmp_path / f"out-{name}", **plan)
    for decoding in ("greedy",):
        written = {}
        for name in runs:
            on_disk = json.loads((tmp_path / f"out-{name}" / "results.json").read_text())
            (model,) = on_disk["models"].values()
            dec = model["tasks"][TASK]["decodings"][decoding]
            written[name] = {c: dec.get(c) for c in COUNTERS}
            written[name]["generated+cached"] = dec["generated"] + dec["cached"]
        assert all(written["full"][c] for c in COUNTERS), written["full"]
        assert written["budgeted"] == written["full"], decoding
        assert written["sequential"] == written["full"], decoding


def fails_after(n: int):
    seen = {"n": 0}

    def respond(req: GenerationRequest) -> str:
        seen["n"] += 1
        if seen["n"] > n:
            raise RuntimeError("backend died")
        return hash_choice(req.prompt, ["positive", "negative"])

    return respond


def _two_models(tmp_path: Path, out: Path, **kwargs: Any) -> EvalResults:
    def factory(spec: str) -> FakeBackend:
        if spec == "good":
            return FakeBackend(
                lambda r: hash_choice(r.prompt, ["positive", "negative"]), name="good"
            )
        return FakeBackend(fails_after(10), name="bad")

    return evaluate(
        models=["good", "bad", "never"],
        tasks=[TASK],
        decodings=["greedy"],
        output_dir=out,
        n_boot=100,
        cache_dir=tmp_path / "cache",
        backend_factory=factory,
        **kwargs,
    )


@pytest.mark.slow
@pytest.mark.parametrize("plan", [{"budget": "2x"}, {"target_ci": 1e-9}], ids=["budget", "seq"])
def test_a_budgeted_run_whose_second_model_fails_keeps_the_first(
    tmp_path: Path, plan: dict[str, Any]
) -> None:
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="backend died") as info:
        _two_models(tmp_path, out, **plan)
    note = " ".join(info.value.__notes__)
    assert "good" in note and str(out / "results.json") in note
    results = json.loads((out / "results.json").read_text())
    assert list(results["models"]) == ["good"]
    assert results["failed"] == {"bad": "failed: backend died", "never": "not run"}
    dec = results["models"]["good"]["tasks"][TASK]["decodings"]["greedy"]
    assert dec["budget"]["design"]["cells_run"] > 0
    assert all(s["estimated"] for s in dec["aggregate"].values())
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert {s["model"] for s in samples} == {"good"}  # the failed model's samples dropped
    assert len(samples) == dec["budget"]["design"]["cells_run"]
    # a failed rerun leaves the previous pair and saves beside it, as a full run does
    before = (out / "results.json").read_bytes()
    with pytest.raises(RuntimeError):
        _two_models(tmp_path, out, **plan)
    assert (out / "results.json").read_bytes() == before
    assert list(json.loads((out / "partial" / "results.json").read_text())["models"]) == ["good"]


@pytest.mark.parametrize("plan", [{}, {"budget": "2x"}], ids=["full", "budget"])
def test_without_the_cache_a_failure_never_claims_answers_are_kept(
    tmp_path: Path, plan: dict[str, Any]
) -> None:
    with pytest.raises(RuntimeError) as info:
        evaluate(
            models=["bad"],
            tasks=[TASK],
            decodings=["greedy"],
            output_dir=tmp_path / "run",
            use_cache=False,
            n_boot=0,
            backend_factory=lambda s: FakeBackend(fails_after(10), name="bad"),
            **plan,
        )
    note = " ".join(info.value.__notes__).replace(str(tmp_path), "RUN")
    assert "no model finished" in note
    assert "kept" not in note and "response cache" not in note


def test_budgeted_intervals_lie_in_their_quantitys_range(tmp_path: Path) -> None:
    """A small budget's intervals were cut nowhere: std below 0, a Sharpe above 1."""
    res = evaluate(  # 6 templates x 32 instances: 2x is above the floor, estimated
        models=["m", "n"],
        tasks=[TASK],
        decodings=["greedy"],
        budget="2x",
        n_boot=200,
        cache_dir=tmp_path / "cache",
        backend_factory=lambda s: FakeBackend(
            lambda r: hash_choice(r.prompt + s, ["positive", "negative", "?"]), name=s
        ),
    )
    assert res.paired is not None
    for item in res.paired[TASK]["greedy"]:
        width = {"mean": 1.0, "sharpe": 1.0}  # accuracy, MCC differences: within ±2
        for name in ("mean", "sharpe"):
            part = getattr(item, name)
            limit = 2 * width[name] if item.metric == "mcc" else width[name]
            ends = (part.ci_low, part.ci_high, part.grid_ci_low, part.grid_ci_high)
            assert all(-limit - 1e-12 <= v <= limit + 1e-12 for v in ends), (item.metric, ends)
    dec = res.models["m"].tasks[TASK].decodings["greedy"]
    for metric, stats in dec.aggregate.items():
        bounds = statistic_bounds(corpus.get(metric).value_range)
        assert stats.ci_clipped is not None  # named (the list may be empty)
        for name, (low, high) in bounds.items():
            population = {"mean": "ci", "std": "std_ci", "sharpe": "sharpe_ci"}[name]
            ends = [
                getattr(stats, f"{prefix}_{end}")
                for prefix in (population, f"{name}_grid_ci")
                for end in ("low", "high")
            ]
            assert all(low - 1e-12 <= v <= high + 1e-12 for v in ends), (metric, name, ends)


def _answering(
    tmp_path: Path, answer: Callable[[GenerationRequest], str], **options: Any
) -> EvalResults:
    """`evaluate` of one model "m" answering `answer` on TASK, greedy, its cache under
    `tmp_path`; `options` add to these or replace them."""
    given = {
        "models": ["m"],
        "tasks": [TASK],
        "decodings": ["greedy"],
        "cache_dir": tmp_path / "cache",
        "backend_factory": lambda s: FakeBackend(answer),
    }
    return evaluate(**(given | options))


@pytest.mark.parametrize(
    ("plan", "why"),
    [
        ({"budget": "1.0"}, "the budget covers the grid (192 cells)"),
        ({"budget": "2x", "limit": 4}, "too small to estimate honestly"),
    ],
    ids=["covers-the-grid", "under-the-floor"],
)
def test_a_budget_that_runs_the_full_grid_is_a_full_run(
    tmp_path: Path, plan: dict[str, Any], why: str
) -> None:
    """Issue 38 §11: a budget that covers the grid, or a grid the floor runs in full,
    marked every number estimated. It is a full run: the full run's numbers, no marks,
    no `budget` record; the config keeps the budget asked and says why it ran in full."""
    answer = lambda r: hash_choice(r.prompt, ["positive", "negative", "?"])  # noqa: E731
    limit = {"limit": plan["limit"]} if "limit" in plan else {}
    full = _answering(tmp_path, answer, n_boot=50, output_dir=tmp_path / "full", **limit)
    out = tmp_path / "run"
    _answering(tmp_path, answer, n_boot=50, output_dir=out, **plan)
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["budget"] == plan["budget"]  # "1" would read back as one cell
    assert why in results["config"]["run_in_full"][TASK]
    dec = results["models"]["m"]["tasks"][TASK]["decodings"]["greedy"]
    assert "budget" not in dec and '"estimated"' not in (out / "results.json").read_text()
    expected = full.models["m"].tasks[TASK].decodings["greedy"].to_dict()
    for key in ("aggregate", "templates"):
        assert dec[key] == expected[key], key
    assert (
        "run_in_full" not in json.loads((tmp_path / "full" / "results.json").read_text())["config"]
    )


def test_score_run_on_a_budgeted_run_says_it_scored_part_of_the_grid(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _answering(
        tmp_path,
        lambda r: hash_choice(r.prompt, ["positive", "no"]),
        budget="2x",
        n_boot=50,
        output_dir=out,
    )
    score_run(out, ["exact_match"], ScoringConfig())
    results = EvalResults.read(out / "results.json")
    rescored = results.models["m"].tasks[TASK].decodings["greedy"].rescored
    assert rescored is not None
    entry = rescored["exact_match"]
    assert entry.cells_scored == 64 and entry.grid_size == 192
    assert entry.aggregate is not None and entry.aggregate.estimated is True
    # a full run's rescoring carries none of these marks
    full = tmp_path / "full"
    _answering(tmp_path, lambda r: "positive", n_boot=0, output_dir=full)
    score_run(full, ["exact_match"], ScoringConfig())
    text = (full / "results.json").read_text()
    assert "cells_scored" not in text and '"estimated"' not in text


def test_a_stopping_rule_never_acts_on_a_degenerate_interval(tmp_path: Path) -> None:
    """--n-boot 2 gave zero-width Sharpe "intervals" that exclude their estimate, and
    --target-ci stopped on them at once. Where few replicates are still allowed, the
    rounds go on to the grid (a minimum --n-boot may refuse the run instead)."""
    try:
        res = _answering(
            tmp_path,
            lambda r: hash_choice(r.prompt, ["positive", "negative", "?"]),
            n_boot=2,
            target_ci=0.5,
        )
    except HakariInputError as exc:
        assert exc.field == "--n-boot"
        return
    dec = res.models["m"].tasks[TASK].decodings["greedy"]
    assert dec.budget is not None and dec.budget.stopped != "target_ci"


def test_the_stop_rule_reads_only_usable_intervals() -> None:
    from hakari.runner.stopping import enough_replicates, usable_interval

    assert enough_replicates(40, 0.95) and enough_replicates(1000, 0.95)
    assert not enough_replicates(2, 0.95) and not enough_replicates(39, 0.95)
    assert not enough_replicates(None, 0.95) and not enough_replicates(100, None)

    assert usable_interval(0.4, 0.3, 0.5)
    assert not usable_interval(0.4, 0.4, 0.4)  # zero width
    assert not usable_interval(0.471, 1.121, 1.121)  # excludes its own estimate
    assert not usable_interval(0.4, None, 0.5)
    assert not usable_interval(0.4, 0.3, float("nan"))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"target_ci": "0.1"}, "--target-ci"),
        ({"target_ci": True}, "--target-ci"),
        ({"until_decided": "yes"}, "--until-decided"),
        ({"n_boot": "100"}, "--n-boot"),
        ({"alpha": True}, "--alpha"),
        ({"budget": True}, "--budget"),
        ({"limit": 2.5}, "--limit"),
        ({"use_cache": "no"}, "--no-cache"),
    ],
)
def test_evaluate_validates_like_the_cli(kwargs: dict[str, Any], field: str) -> None:
    loaded: list[str] = []

    def factory(spec: str) -> FakeBackend:
        loaded.append(spec)
        return FakeBackend(lambda r: "positive")

    with pytest.raises(HakariInputError) as info:
        evaluate(models=["m"], tasks=[TASK], backend_factory=factory, **kwargs)
    assert info.value.field == field
    assert "\n" not in str(info.value)
    assert loaded == []


def test_one_options_record_or_the_flat_keywords_give_the_same_run(tmp_path: Path) -> None:
    from hakari.runner import EvalOptions, LoadOptions, OutputOptions, PlanOptions

    def factory(spec: str) -> FakeBackend:
        return FakeBackend(lambda r: hash_choice(r.prompt, ["positive", "negative"]))

    done: list[tuple[str, str, list[str]]] = []
    seen: list[str] = []
    options = EvalOptions(
        load=LoadOptions(cache_dir=tmp_path / "cache"),
        plan=PlanOptions(decodings=["greedy", "loglik"], limit=4, n_boot=50, grid_budget="2x"),
        output=OutputOptions(
            on_task_done=lambda m, t, result: done.append((m, t, sorted(result.decodings))),
            on_progress=lambda label, total, n: seen.append(label),
        ),
    )
    record = evaluate(["m"], [TASK], options, backend_factory=factory)
    flat = evaluate(
        models=["m"],
        tasks=[TASK],
        decodings=["greedy", "loglik"],
        limit=4,
        n_boot=50,
        budget="2x",
        cache_dir=tmp_path / "cache",
        backend_factory=factory,
    )
    for decoding in ("greedy", "loglik"):
        a = record.models["m"].tasks[TASK].decodings[decoding]
        b = flat.models["m"].tasks[TASK].decodings[decoding]
        assert (a.aggregate, a.templates) == (b.aggregate, b.templates)
        # the second read the cache; 4 instances lie under the budget floor
        # (aggregate/budget/floor.py), so both ran the whole grid: 6 templates x 4
        assert (a.generated, b.cached) == (b.cached, 6 * 4)
    assert record.config.budget == flat.config.budget == "2x"
    assert done == [("m", TASK, ["greedy", "loglik"])]
    assert seen and all(label.startswith(f"m · {TASK}") for label in seen)
    with pytest.raises(TypeError, match="n_boots"):
        evaluate(["m"], [TASK], n_boots=5, backend_factory=factory)


def test_the_documented_python_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers.paths import REPO

    text = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    blocks = text.split("```python\n")[1:]
    assert blocks
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block.split("```")[0], "python-api.md", "exec"), {})
