"""`--sample N --seed S`: a seeded random subset of instances, the same for every model,
decoding and template, recorded in results.json; bad values end in one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hakari.backends.fake import FakeBackend, hash_choice
from hakari.runner import evaluate
from hakari.runner.preflight import scan_rows
from hakari.runner.sampling import sample_positions
from hakari.runner.settings import PlanOptions
from hakari.tasks.loader import load_task
from tests.helpers.cli import assert_one_line, invoke
from tests.helpers.paths import SHARED

DATASETS = SHARED / "datasets"
TASK = "demo_sentiment_en"  # 32 inline instances


@pytest.fixture
def model_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    loaded: list[str] = []

    def refuse(spec: str, **kwargs: object) -> None:
        loaded.append(spec)
        raise AssertionError(f"a model was loaded before the bad input was reported: {spec}")

    monkeypatch.setattr("hakari.backends.registry.load_backend", refuse)
    return loaded


def test_sample_positions_are_seeded_distinct_and_ordered() -> None:
    a = sample_positions(100, 20, seed=7)
    assert a == sample_positions(100, 20, seed=7)
    assert a == sorted(set(a)) and len(a) == 20 and 0 <= a[0] and a[-1] < 100
    assert a != sample_positions(100, 20, seed=8)
    assert sample_positions(5, 5, seed=1) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="cannot sample 6 of 5"):
        sample_positions(5, 6, seed=0)


def test_every_model_and_decoding_sees_the_same_sample(tmp_path: Path) -> None:
    def responder(request: object) -> str:
        return hash_choice(getattr(request, "prompt", ""), ["positive", "negative"])

    backends = {m: FakeBackend(responder, name=m) for m in ("a", "b")}
    res = evaluate(
        models=["a", "b"],
        tasks=[TASK],
        decodings=["greedy", "constrained"],
        sample=10,
        seed=3,
        n_boot=50,
        cache_dir=tmp_path / "cache",
        output_dir=tmp_path / "run",
        backend_factory=lambda s: backends[s],
    )
    expected = sample_positions(32, 10, seed=3)
    assert res.config.sample == 10 and res.config.seed == 3
    assert res.config.sampled_rows == {TASK: expected}
    assert res.config.limit is None
    seen: dict[tuple[str, str, str], set[int]] = {}
    for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines():
        rec = json.loads(line)
        key = (rec["model"], rec["decoding"], rec["template_id"])
        seen.setdefault(key, set()).add(rec["index"])  # the position in the split
    assert len(seen) == 2 * 2 * 6
    assert all(sorted(indices) == expected for indices in seen.values())
    for model in ("a", "b"):
        task = res.models[model].tasks[TASK]
        assert task.n_instances == 10
        assert all(t.n == 10 for t in task.decodings["greedy"].templates.values())
    again = evaluate(
        models=["a"],
        tasks=[TASK],
        decodings=["greedy"],
        sample=10,
        seed=3,
        n_boot=50,
        cache_dir=tmp_path / "cache",
        backend_factory=lambda s: backends[s],
    )
    # the same seed gives the same instances, hence every answer from the cache
    assert again.models["a"].tasks[TASK].decodings["greedy"].generated == 0


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--sample", "0"], ["--sample", "≥ 1"]),
        (["--sample", "-3"], ["--sample", "≥ 1"]),
        (["--sample", "33"], ["--sample 33", "only 32 rows", "demo_sentiment_en.yaml"]),
        (["--sample", "5", "--limit", "5"], ["--sample", "not both"]),
        (["--sample", "5", "--seed", "-1"], ["--seed", "≥ 0"]),
    ],
)
def test_bad_sample_is_one_line_before_any_model_loads(
    args: list[str], needles: list[str], model_loads: list[str]
) -> None:
    code, out = invoke("--tasks", TASK, "--decoding", "greedy", *args)
    assert_one_line(code, out, *needles)
    assert model_loads == []


def test_jcola_sample_is_representative_where_the_first_rows_are_not() -> None:
    if not (DATASETS / "jcola").is_dir():
        pytest.skip(f"shared datasets not found at {DATASETS}")
    task = load_task("jcola")

    def chance(**kw: object) -> float:
        baseline = scan_rows(task, PlanOptions(data_dir=DATASETS, **kw), ["greedy"])  # type: ignore[arg-type]
        return baseline.chance["accuracy"]

    overall = chance()
    assert overall == pytest.approx(0.839, abs=5e-4)
    assert chance(limit=20) == pytest.approx(0.900)  # the file is ordered
    assert chance(sample=20, seed=0) == chance(sample=20, seed=0)  # deterministic
    rates = [chance(sample=20, seed=s) for s in range(40)]
    assert len(set(rates)) > 3  # seeds draw different rows
    # unbiased: the mean over seeds sits near the split's rate (sd of one sample of 20
    # is about sqrt(0.84 * 0.16 / 20) = 0.08, of the mean of 40 about 0.013)
    assert float(np.mean(rates)) == pytest.approx(overall, abs=0.03)
