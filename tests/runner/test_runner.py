"""The engine end to end on a deterministic fake backend (no model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hakari.backends.fake import FakeBackend
from hakari.results import EvalResults
from hakari.runner import evaluate
from tests.helpers.oracle import TASK, half_oracle, oracle_table


def test_scores_fallbacks_and_sharpe(tmp_path: Path) -> None:
    backend = FakeBackend(half_oracle(TASK))
    res = evaluate(
        tasks=[TASK],
        decodings=["greedy", "constrained"],
        output_dir=tmp_path / "run",
        cache_dir=tmp_path / "cache",
        n_boot=200,
        backend_factory=lambda spec: backend,
    )
    dec = res.models["smollm2-135m"].tasks[TASK].decodings["greedy"]
    for tid in ("0-0", "0-1", "0-2"):
        assert dec.templates[tid].metrics["accuracy"] == 1.0
        assert dec.templates[tid].fallback_rate == 0.0
    for tid in ("1-0", "1-1", "1-2"):
        # fallback label "positive" for everything: half the demo reviews are positive
        assert dec.templates[tid].metrics["accuracy"] == 0.5
        assert dec.templates[tid].fallback_rate == 1.0
        assert dec.templates[tid].metrics["mcc"] == 0.0
    # each template's interval comes from the same bootstrap: a perfect template has no
    # spread, a fallback template's accuracy varies with the resampled golds
    for metric in ("accuracy", "mcc"):
        perfect = dec.templates["0-0"].ci
        assert perfect is not None and perfect[metric].low == perfect[metric].high == 1.0
    fallback = dec.templates["1-0"].ci
    assert fallback is not None and fallback["mcc"].low == fallback["mcc"].high == 0.0
    assert 0.2 < fallback["accuracy"].low < 0.5 < fallback["accuracy"].high < 0.8
    acc = dec.aggregate["accuracy"]
    assert acc.mean == pytest.approx(0.75)
    assert acc.std == pytest.approx(0.25)  # population std of [1,1,1,.5,.5,.5]
    assert acc.sharpe == pytest.approx(0.75 / (1.0 * 0.25 + 1))
    assert acc.ci_low is not None and acc.ci_high is not None
    assert acc.ci_low <= acc.mean <= acc.ci_high
    assert res.models["smollm2-135m"].tasks[TASK].chance["accuracy"] == 0.5
    assert backend.closed

    on_disk = json.loads((tmp_path / "run" / "results.json").read_text())
    assert on_disk["schema_version"] == 1
    t = on_disk["models"]["smollm2-135m"]["tasks"][TASK]["decodings"]["constrained"]
    assert set(t["templates"]) == {"0-0", "0-1", "0-2", "1-0", "1-1", "1-2"}
    assert set(t["aggregate"]["accuracy"]) >= {
        "mean",
        "std",
        "min",
        "max",
        "sharpe",
        "alpha",
        "ci_low",
        "ci_high",
    }
    assert set(t["templates"]["0-0"]["ci"]) == {"accuracy", "mcc"}
    samples = (tmp_path / "run" / "samples.jsonl").read_text().splitlines()
    assert len(samples) == 2 * 6 * 32
    first = json.loads(samples[0])
    assert {"output", "answer", "fallback", "gold", "template_id", "index"} <= set(first)


def _greedy(backend: FakeBackend, **options: Any) -> EvalResults:
    """`evaluate` of the demo task with `backend`, greedy and without a bootstrap."""
    given = {
        "tasks": [TASK],
        "decodings": ["greedy"],
        "n_boot": 0,
        "backend_factory": lambda spec: backend,
    }
    return evaluate(**(given | options))


def test_rerun_generates_only_what_is_missing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = FakeBackend(half_oracle(TASK))
    _greedy(first, limit=10, cache_dir=cache)
    assert len(first.generated) == 10 * 6
    second = FakeBackend(half_oracle(TASK))
    full = _greedy(second, cache_dir=cache)
    assert len(second.generated) == (32 - 10) * 6
    dec = full.models["smollm2-135m"].tasks[TASK].decodings["greedy"]
    assert (dec.generated, dec.cached) == (22 * 6, 10 * 6)
    third = FakeBackend(half_oracle(TASK))
    again = _greedy(third, cache_dir=cache)
    assert third.generated == []
    a = again.models["smollm2-135m"].tasks[TASK].decodings["greedy"]
    assert {k: v.metrics for k, v in a.templates.items()} == {
        k: v.metrics for k, v in dec.templates.items()
    }


def test_no_cache_regenerates(tmp_path: Path) -> None:
    for _ in range(2):
        backend = FakeBackend(half_oracle(TASK))
        _greedy(backend, limit=3, use_cache=False, cache_dir=tmp_path)
        assert len(backend.generated) == 18


def test_constrained_requests_carry_the_regex_and_greedy_stops_at_newline(tmp_path: Path) -> None:
    backend = FakeBackend(half_oracle(TASK))
    evaluate(
        tasks=[TASK],
        decodings=["greedy", "constrained"],
        limit=1,
        n_boot=0,
        cache_dir=tmp_path,
        backend_factory=lambda s: backend,
    )
    greedy = [r for r in backend.generated if r.regex is None]
    constrained = [r for r in backend.generated if r.regex is not None]
    assert len(greedy) == len(constrained) == 6
    assert all(r.stop == ("\n",) and r.max_new_chars == 24 for r in greedy)
    assert all(r.max_new_tokens == 96 for r in greedy)  # 4 a character: any tokenizer
    # a greedy label answer ends once its label is decided; constrained ones by the regex
    assert all(r.stop_after is not None for r in greedy)
    assert all(r.stop_after is None for r in constrained)
    assert sorted({r.regex for r in constrained}) == [
        "(positive|negative)",
        "(yes|no)",
        "[01]",
        "[AB]",
    ]


def test_chat_prompt_format_uses_messages(tmp_path: Path) -> None:
    backend = FakeBackend(lambda r: "0", supports_chat=True)
    evaluate(
        tasks=[TASK],
        decodings=["greedy"],
        limit=1,
        n_boot=0,
        cache_dir=tmp_path,
        backend_factory=lambda s: backend,
    )
    assert all(r.messages and r.messages[0].role == "user" for r in backend.generated)
    plain = FakeBackend(lambda r: "0", supports_chat=True)
    evaluate(
        tasks=[TASK],
        decodings=["greedy"],
        limit=1,
        n_boot=0,
        cache_dir=tmp_path,
        prompt_format="completion",
        backend_factory=lambda s: plain,
    )
    assert all(r.messages is None for r in plain.generated)


def test_loglik_picks_the_best_scored_verbalisation(tmp_path: Path) -> None:
    table = oracle_table(TASK)
    backend = FakeBackend(
        lambda r: "", loglik_scorer=lambda req, cont: 0.0 if table[req.prompt] == cont else -5.0
    )
    res = evaluate(
        tasks=[TASK],
        decodings=["loglik"],
        n_boot=0,
        cache_dir=tmp_path,
        backend_factory=lambda s: backend,
    )
    dec = res.models["smollm2-135m"].tasks[TASK].decodings["loglik"]
    assert all(
        t.metrics["accuracy"] == 1.0 and t.fallback_rate == 0 for t in dec.templates.values()
    )
    assert backend.generated == []


def test_several_models_get_an_alpha_sweep(tmp_path: Path) -> None:
    table = oracle_table(TASK)
    steady = FakeBackend(lambda r: table[r.prompt] if len(r.prompt) % 5 else "x", name="steady")
    spiky = FakeBackend(half_oracle(TASK), name="spiky")
    backends = {"steady": steady, "spiky": spiky}
    res = evaluate(
        models=["steady", "spiky"],
        tasks=[TASK],
        decodings=["greedy"],
        n_boot=0,
        cache_dir=tmp_path,
        backend_factory=lambda s: backends[s],
    )
    assert res.alpha_sweep is not None
    sweep = res.alpha_sweep[TASK]["greedy"]["accuracy"]
    assert [round(p.alpha, 1) for p in sweep] == [round(0.1 * i, 1) for i in range(21)]
    assert set(sweep[0].ranking) == {"steady", "spiky"}
