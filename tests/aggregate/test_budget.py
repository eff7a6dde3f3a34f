"""Budgeted evaluation, the statistics: budgets, the balanced design, grid completion,
estimates and intervals, multiple comparisons."""

from __future__ import annotations

import numpy as np
import pytest

from hakari.aggregate import bootstrap, paired_bootstrap
from hakari.aggregate.budget.completion import CodedGrid, impute
from hakari.aggregate.budget.design import Budget, balanced_design, parse_budget
from hakari.aggregate.budget.estimate import estimate
from hakari.aggregate.budget.grid import label_grid, number_grid, score_grid
from hakari.aggregate.multiple import adjust, tied_groups

# ----------------------------------------------------------------------------- budgets


@pytest.mark.parametrize(
    ("text", "kind", "value", "cells"),
    [
        ("2x", "multiple", 2.0, 200),
        ("1.5X", "multiple", 1.5, 150),
        ("0.1", "fraction", 0.1, 180),
        ("1.0", "fraction", 1.0, 1800),
        ("500", "cells", 500.0, 500),
        ("99999", "cells", 99999.0, 1800),  # never more than the grid
    ],
)
def test_parse_budget(text: str, kind: str, value: float, cells: int) -> None:
    budget = parse_budget(text)
    assert (budget.kind, budget.value) == (kind, value)
    assert budget.cells(18, 100) == cells


@pytest.mark.parametrize("text", ["", "x", "0x", "-2x", "0", "1.5", "nan", "inf", "2xx", "0.0"])
def test_parse_budget_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="expected a multiple"):
        parse_budget(text)


def test_budget_is_at_least_one_cell() -> None:
    assert Budget("fraction", 1e-9).cells(8, 10) == 1


# ----------------------------------------------------------------------------- design


def test_design_sees_every_instance_before_any_twice_and_balances_strata() -> None:
    strata = np.array([0] * 60 + [1] * 30 + [2] * 10)
    n, t = strata.size, 12
    design = balanced_design(t, strata, seed=3)
    assert design.order.shape == (t * n, 2)
    assert len({tuple(row) for row in design.order}) == t * n  # every cell exactly once
    for level in range(t):
        block = design.order[level * n : (level + 1) * n]
        assert sorted(block[:, 1].tolist()) == list(range(n))  # each instance once per level
        for s in range(3):
            members = block[strata[block[:, 1]] == s]
            counts = np.bincount(members[:, 0], minlength=t)
            assert counts.max() - counts.min() <= 1  # templates balanced within the stratum
    mask = design.mask(2 * n)
    assert (mask.sum(axis=0) == 2).all()
    # a prefix inside a level covers the strata in proportion
    head = design.order[: n // 2, 1]
    shares = np.bincount(strata[head], minlength=3) / head.size
    assert np.allclose(shares, [0.6, 0.3, 0.1], atol=0.05)


def test_design_is_deterministic_and_nested() -> None:
    strata = np.arange(50) % 3
    a, b = balanced_design(8, strata, seed=1), balanced_design(8, strata, seed=1)
    assert np.array_equal(a.order, b.order)
    assert not np.array_equal(a.order, balanced_design(8, strata, seed=2).order)
    small, large = a.mask(70), a.mask(130)
    assert (small <= large).all() and small.sum() == 70
    assert a.record(70).to_dict() == {
        "name": "balanced-levels",
        "seed": 1,
        "cells_run": 70,
        "grid_size": 400,
        "fraction": 70 / 400,
    }


# ----------------------------------------------------------------------------- grids


def _simulated_labels(
    seed: int, t: int = 10, n: int = 120, k: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, k, n)
    skill = rng.normal(0.5, 0.5, t)
    bias = rng.normal(0.0, 0.8, (t, k))
    difficulty = rng.normal(0.0, 1.5, n)
    logits = np.repeat(bias[:, None, :], n, axis=1)
    logits[:, np.arange(n), gold] += 1.5 * (skill[:, None] + difficulty[None, :])
    return np.argmax(logits + rng.gumbel(size=logits.shape), axis=2), gold


def _label_inputs(answers: np.ndarray, gold: np.ndarray, mask: np.ndarray):
    labels = ["e", "n", "c"]
    tids = [f"{t}-0" for t in range(answers.shape[0])]
    observed = {
        tid: {int(i): labels[answers[t, i]] for i in np.flatnonzero(mask[t])}
        for t, tid in enumerate(tids)
    }
    return tids, observed, [labels[g] for g in gold], labels


def test_label_grid_codes_and_unknown_labels() -> None:
    grid = label_grid(["a", "b"], {"a": {0: "x", 1: "zz"}, "b": {1: "y"}}, ["y", "x"], ["x", "y"])
    assert grid.coded.codes.tolist() == [[0, 2], [-1, 1]]  # "zz" gets a code of its own
    assert grid.labels == ("x", "y", "zz")
    assert grid.coded.strata.tolist() == [1, 0]
    with pytest.raises(ValueError, match="unknown templates"):
        label_grid(["a"], {"q": {0: "x"}}, ["x"], ["x"])
    with pytest.raises(ValueError, match="outside"):
        label_grid(["a"], {"a": {3: "x"}}, ["x"], ["x"])


def test_score_and_number_grids_code_cells_and_fill_from_donors() -> None:
    nan = np.nan
    em = np.array([[1.0, 0.0, nan, 0.0], [0.0, nan, 1.0, 0.0]])
    f1 = np.array([[1.0, 0.5, nan, 0.0], [0.25, nan, 1.0, 0.0]])
    grid = score_grid(["a", "b"], {"exact_match": em, "f1": f1}, [None] * 4)
    assert grid.coded.codes.tolist() == [[2, 1, -1, 0], [1, -1, 2, 0]]
    codes = grid.coded.codes.copy()
    codes[0, 2], codes[1, 1] = 1, 1  # impute "partial" in both missing cells
    filled = grid.complete_values(codes, np.random.default_rng(0))
    assert filled is not None
    assert filled[0, 2].tolist() == [0.0, 0.5]  # template a's own partial answer
    assert filled[1, 1].tolist() == [0.0, 0.25]  # template b's own partial answer

    preds = np.array([[1.0, 2.0, nan], [3.0, nan, 2.0]])
    numbers = number_grid(["a", "b"], preds, [0.5, 2.5, 4.5])
    assert numbers.coded.codes.tolist() == [[0, 1, -1], [2, -1, 1]]
    assert numbers.coded.n_strata == 3


# ----------------------------------------------------------------------------- estimates


def test_full_grid_estimates_equal_the_full_run() -> None:
    answers, gold = _simulated_labels(0)
    tids, observed, refs, labels = _label_inputs(answers, gold, np.ones(answers.shape, bool))
    grid = label_grid(tids, observed, refs, labels)
    estimates, completion = estimate(grid, ["accuracy", "mcc"], n_boot=300, seed=4, n_draws=5)
    assert completion.record().cells_observed == answers.size
    for metric in ("accuracy", "mcc"):
        full = bootstrap(
            {t: [observed[t][i] for i in range(len(refs))] for t in tids},
            refs,
            metric,
            n_boot=300,
            seed=4,
        )
        est = estimates[metric]
        assert est.per_template == pytest.approx(full.per_template, abs=1e-12)
        for name in ("mean", "std", "sharpe"):
            assert getattr(est.stats, name) == pytest.approx(getattr(full.stats, name), abs=1e-12)
            low, high = est.grid_ci[name]
            assert low == pytest.approx(high, abs=1e-12)  # nothing left to estimate
        assert (est.stats.ci_low, est.stats.ci_high) == pytest.approx(full.mean_ci, abs=1e-12)
        assert (est.stats.sharpe_ci_low, est.stats.sharpe_ci_high) == pytest.approx(
            full.sharpe_ci, abs=1e-12
        )
        assert est.std_ci == pytest.approx(full.std_ci, abs=1e-12)
        assert est.stats.estimated is True and est.stats.to_dict()["estimated"] is True


@pytest.mark.slow
def test_budgeted_estimates_cover_the_full_grid() -> None:
    answers, gold = _simulated_labels(1, t=12, n=240)
    design = balanced_design(12, gold, seed=5)
    mask = design.mask(2 * 240)
    tids, observed, refs, labels = _label_inputs(answers, gold, mask)
    estimates, completion = estimate(
        label_grid(tids, observed, refs, labels), ["accuracy"], n_boot=200, seed=5
    )
    accuracy = (answers == gold[None, :]).mean(axis=1)
    est = estimates["accuracy"]
    truth = {
        "mean": accuracy.mean(),
        "std": accuracy.std(),
        "sharpe": accuracy.mean() / (accuracy.std() + 1),
    }
    for name, value in truth.items():
        low, high = est.grid_ci[name]
        assert low <= value <= high, name
        assert est.statistics[name].replicates.point == pytest.approx(getattr(est.stats, name))
    assert abs(est.stats.sharpe - truth["sharpe"]) < 0.03
    inside = [
        est.per_template_ci[t][0] <= accuracy[k] <= est.per_template_ci[t][1]
        for k, t in enumerate(tids)
    ]
    assert np.mean(inside) >= 0.75
    assert completion.record().cells_observed == 480


def test_imputations_keep_observed_cells_and_differ_between_draws() -> None:
    answers, gold = _simulated_labels(2)
    mask = balanced_design(10, gold, seed=0).mask(240)
    codes = np.where(mask, answers, -1)
    draws, _choice, _ = impute(CodedGrid(codes, gold, 3, 3), 6, seed=1)
    assert draws.shape == (6, *answers.shape)
    assert (draws[:, mask] == answers[mask]).all()
    assert not (draws[0][~mask] == draws[1][~mask]).all()
    again, _, _ = impute(CodedGrid(codes, gold, 3, 3), 6, seed=1)
    assert np.array_equal(draws, again)


# ----------------------------------------------------------------------------- many models


def test_adjusted_tests_and_groups() -> None:
    rng = np.random.default_rng(0)
    n, t = 300, 8
    gold = [int(x) for x in rng.integers(0, 2, n)]
    skills = {"a": 0.9, "b": 0.88, "c": 0.6, "d": 0.58}
    preds = {}
    for model, skill in skills.items():
        correct = rng.random((t, n)) < skill + rng.normal(0, 0.02, (t, 1))
        preds[model] = {
            f"{k}-0": [g if ok else 1 - g for g, ok in zip(gold, row, strict=True)]
            for k, row in enumerate(correct)
        }
    comparisons = paired_bootstrap(preds, gold, "accuracy", n_boot=400, seed=1)
    pairs = [(c.model_a, c.model_b) for c in comparisons]
    tests = adjust(
        pairs,
        [c.replicates["sharpe"] for c in comparisons],
        [c.sharpe.p_value for c in comparisons],
    )
    by_pair = {(x.model_a, x.model_b): x for x in tests}
    for x in tests:
        assert x.p_romano_wolf >= x.p_value - 1e-12
        assert x.p_holm >= x.p_value - 1e-12
        assert (
            x.p_romano_wolf <= x.p_holm + 1e-12
        )  # step-down on the max is never worse than Holm here
        assert x.simultaneous_low <= x.diff <= x.simultaneous_high
    assert by_pair[("a", "c")].verdict(0.05) == "a_better"
    assert by_pair[("a", "b")].verdict(0.05) == "tied"
    scores = {c.model_a: c.sharpe.a for c in comparisons} | {
        c.model_b: c.sharpe.b for c in comparisons
    }
    assert tied_groups(scores, tests, 0.05) == [["a", "b"], ["c", "d"]]


def test_holm_and_groups_by_hand() -> None:
    from hakari.aggregate.intervals import Replicates

    flat = Replicates(
        point=0.0,
        point_se=0.1,
        values=np.zeros(10),
        values_se=np.full(10, 0.1),
        instance_values=np.zeros(10),
    )
    tests = adjust([("a", "b"), ("a", "c"), ("b", "c")], [flat, flat, flat], [0.01, 0.04, 0.03])
    assert [x.p_holm for x in tests] == pytest.approx([0.03, 0.06, 0.06])
    # a-b differ, b-c differ, a-c tied: groups {a, c} and {b}
    scores = {"a": 0.9, "b": 0.5, "c": 0.8}

    class Fixed:
        def __init__(self, a: str, b: str, verdict: str) -> None:
            self.model_a, self.model_b, self._v = a, b, verdict

        def verdict(self, level: float) -> str:
            return self._v

    fixed = [Fixed("a", "b", "a_better"), Fixed("b", "c", "b_better"), Fixed("a", "c", "tied")]
    assert tied_groups(scores, fixed, 0.05) == [["a", "c"], ["b"]]  # type: ignore[arg-type]


def test_the_tied_groups_stop_at_their_bound_and_say_so() -> None:
    """30 models whose only significant differences are inside 10 disjoint triples:
    3^10 = 59,049 maximal tied groups (one model of each triple), which the enumeration
    would list for minutes; it stops at `MAX_GROUPS` and the record says it was cut."""
    from hakari.aggregate.multiple import MAX_GROUPS, group_record, tied_groups_cut

    class Fixed:
        def __init__(self, a: str, b: str, verdict: str) -> None:
            self.model_a, self.model_b, self._v = a, b, verdict

        def verdict(self, level: float) -> str:
            return self._v

        def to_dict(self, level: float) -> dict:
            return {"model_a": self.model_a, "model_b": self.model_b, "diff": 0.0,
                    "p_value": 0.0, "p_adjusted": 0.0, "p_holm": 0.0,
                    "simultaneous_ci_low": 0.0, "simultaneous_ci_high": 0.0,
                    "verdict": self._v}  # fmt: skip

    models = [f"m{i:02d}" for i in range(30)]
    scores = {m: 1.0 - i / 100 for i, m in enumerate(models)}
    tests = [
        Fixed(a, b, "a_better" if i // 3 == j // 3 else "tied")
        for i, a in enumerate(models)
        for j, b in enumerate(models)
        if i < j
    ]
    groups, cut = tied_groups_cut(scores, tests, 0.05)  # type: ignore[arg-type]
    assert cut and len(groups) == MAX_GROUPS
    assert all(len(g) == 10 and len({int(m[1:]) // 3 for m in g}) == 10 for g in groups)
    record = group_record(tests, scores)  # type: ignore[arg-type]
    assert record.groups_cut and len(record.groups) == MAX_GROUPS
    few, cut = tied_groups_cut(scores, tests[:5], 0.05)  # type: ignore[arg-type]
    assert len(few) < MAX_GROUPS and not cut and not group_record(tests[:5], scores).groups_cut  # type: ignore[arg-type]
