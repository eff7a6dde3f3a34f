"""What a prompt space tells (aggregate/dimensions.py): the per-dimension share of the
variance over templates, the best − worst level difference and the percentiles, read from
the aggregate's own bootstrap; and the facts of the real Qwen2.5 MMLU grids."""

from __future__ import annotations

import gzip
import json
from typing import Any

import numpy as np
import pytest

from hakari import aggregate as agg
from hakari.aggregate.dimensions import summarize
from tests.helpers.paths import SHARED

REAL = SHARED / "real-grids"


def _grid_bootstrap(item_scores: np.ndarray, n_boot: int = 400) -> agg.BootstrapResult:
    """A 0/1 correctness grid as the run scores it: each cell's answer is right (1) or
    wrong (0) against a gold of 1, scored by the registered accuracy metric through the
    run's bootstrap, so a template's score is its accuracy over the items."""
    preds = {f"t{i}": [int(v) for v in row] for i, row in enumerate(item_scores)}
    return agg.bootstrap(preds, [1] * item_scores.shape[1], "accuracy", n_boot=n_boot, seed=0)


def _anova(x: np.ndarray, levels: list[str]) -> tuple[float, float]:
    """eta² and omega² the textbook way, one level at a time."""
    m, n = x.mean(), len(x)
    groups = [x[[lv == g for lv in levels]] for g in dict.fromkeys(levels)]
    between = sum(len(g) * (g.mean() - m) ** 2 for g in groups)
    total = ((x - m) ** 2).sum()
    within = (total - between) / (n - len(groups))
    return between / total, (between - (len(groups) - 1) * within) / (total + within)


def _synthetic(seed: int = 1) -> tuple[np.ndarray, dict[str, dict[str, str]]]:
    rng = np.random.default_rng(seed)
    n_templates, n_items = 24, 80
    cue = [["plain", "colon", "answer is"][t % 3] for t in range(n_templates)]
    order = [["given", "reversed"][(t // 3) % 2] for t in range(n_templates)]
    skill = {"plain": 0.3, "colon": 0.6, "answer is": 0.8}
    grid = np.array(
        [rng.random(n_items) < skill[c] + rng.normal(0, 0.02) for c in cue], dtype=np.int64
    )
    levels = {f"t{t}": {"cue": cue[t], "order": order[t]} for t in range(n_templates)}
    return grid, levels


def test_shares_match_the_textbook_one_way_anova() -> None:
    grid, levels = _synthetic()
    boot = _grid_bootstrap(grid)
    space = summarize(boot.per_template, levels, boot, (0.0, 1.0))
    assert space is not None
    x = np.array(list(boot.per_template.values()))
    for dim, effect in space.dimensions.items():
        eta, omega = _anova(x, [levels[t][dim] for t in boot.per_template])
        assert effect.eta_squared == pytest.approx(eta)
        assert effect.share == pytest.approx(omega)
    cue = space.dimensions["cue"]
    assert cue.share is not None and cue.share > 0.9  # the cue sets the skill
    assert (cue.best, cue.worst) == ("answer is", "plain")
    means = {lv.level: lv.mean for lv in cue.levels}
    assert cue.best_minus_worst == pytest.approx(means["answer is"] - means["plain"])
    assert cue.diff_ci_low is not None and cue.diff_ci_high is not None
    assert 0.3 < cue.diff_ci_low < cue.best_minus_worst < cue.diff_ci_high < 0.7
    order = space.dimensions["order"]
    assert order.share is not None and order.share < 0.1
    assert order.share_ci_low is not None and order.share_ci_high is not None
    assert order.share_ci_low < 0.2 and cue.share_ci_low is not None and cue.share_ci_low > 0.7


def test_percentiles_and_their_intervals() -> None:
    grid, levels = _synthetic(2)
    boot = _grid_bootstrap(grid)
    space = summarize(boot.per_template, levels, boot, (0.0, 1.0))
    assert space is not None and space.confidence == 0.95
    x = np.array(list(boot.per_template.values()))
    assert [p.q for p in space.percentiles] == [5.0, 50.0, 95.0]
    for p in space.percentiles:
        assert p.value == pytest.approx(np.quantile(x, p.q / 100))
        assert p.ci_low is not None and p.ci_high is not None
        assert 0.0 <= p.ci_low <= p.ci_high <= 1.0


def test_each_level_mean_has_its_interval() -> None:
    """Percentile method: each level's interval is the percentile interval of that
    level's mean over the replicates' drawn templates, computed here by hand; studentised
    (the default): an interval around the mean, inside the metric's range."""
    grid, levels = _synthetic(3)
    preds = {f"t{i}": [int(v) for v in row] for i, row in enumerate(grid)}
    boot = agg.bootstrap(
        preds, [1] * grid.shape[1], "accuracy", n_boot=400, seed=0, ci_method="percentile"
    )
    space = summarize(boot.per_template, levels, boot, (0.0, 1.0))
    assert space is not None
    reps = boot.replicates
    assert reps.picked is not None
    ids = list(reps.template_ids)
    for dim, effect in space.dimensions.items():
        codes = np.array([levels[t][dim] for t in ids])
        for lv in effect.levels:
            inside = codes[reps.picked] == lv.level
            with np.errstate(invalid="ignore"):
                means = (reps.resampled * inside).sum(1) / inside.sum(1)
            means = means[np.isfinite(means)]
            low, high = np.quantile(means, [0.025, 0.975])
            assert (lv.ci_low, lv.ci_high) == (pytest.approx(low), pytest.approx(high))
            x = np.array([boot.per_template[t] for t in ids])
            assert lv.mean == pytest.approx(x[codes == lv.level].mean())
    studentised = summarize(*_space_inputs(grid, levels))
    assert studentised is not None
    for effect in studentised.dimensions.values():
        for lv in effect.levels:
            assert lv.ci_low is not None and lv.ci_high is not None
            assert 0.0 <= lv.ci_low < lv.mean < lv.ci_high <= 1.0
    plain = summarize(boot.per_template, levels, None)
    assert plain is not None
    assert all(lv.ci_low is None for e in plain.dimensions.values() for lv in e.levels)


def _space_inputs(grid: np.ndarray, levels: dict[str, dict[str, str]]) -> tuple[Any, ...]:
    boot = _grid_bootstrap(grid)
    return boot.per_template, levels, boot, (0.0, 1.0)


def test_replicates_record_the_templates_they_drew() -> None:
    grid, _ = _synthetic()
    reps = _grid_bootstrap(grid, n_boot=50).replicates
    assert reps.picked is not None
    np.testing.assert_array_equal(reps.resampled, np.take_along_axis(reps.every, reps.picked, 1))


def test_no_levels_no_space_and_no_bootstrap_no_intervals() -> None:
    grid, levels = _synthetic()
    boot = _grid_bootstrap(grid, n_boot=40)
    assert summarize(boot.per_template, {t: None for t in levels}, boot) is None
    space = summarize(boot.per_template, levels, None)
    assert space is not None and space.confidence is None
    assert all(e.share_ci_low is None and e.diff_ci_low is None for e in space.dimensions.values())
    assert all(p.ci_low is None for p in space.percentiles)


def test_hand_written_templates_beside_a_space_are_left_out() -> None:
    grid, levels = _synthetic()
    boot = _grid_bootstrap(grid, n_boot=40)
    del levels["t0"]
    space = summarize(boot.per_template, {**levels, "t0": None}, boot)
    assert space is not None and space.n_templates == len(grid) - 1
    assert space.dimensions["cue"].share_ci_low is None  # draws mixed both kinds


def _real(model: str, subject: str) -> dict[str, Any]:
    path = REAL / f"qwen2.5-{model}__mmlu_{subject}__loglik.json.gz"
    with gzip.open(path, "rt") as f:
        return json.load(f)


@pytest.mark.skipif(not REAL.is_dir(), reason=f"needs the real grids in {REAL}")
@pytest.mark.parametrize("subject", ["marketing", "high_school_psychology"])
def test_real_qwen_grids_say_what_the_cue_does(subject: str) -> None:
    """0.5B: the answer cue alone explains about 60% of the variance over templates;
    1.5B: no single dimension more than about 17% (README of the grids)."""
    bank = json.loads((REAL / "qwen-template-bank.json").read_text())
    shares = {}
    for model in ("0.5b", "1.5b"):
        grid = _real(model, subject)
        boot = _grid_bootstrap(np.array(grid["item_scores"]["exact_match"]))
        # the grid's template ids are t0..t39 in the bank's order
        assert list(boot.per_template) == grid["template_ids"]
        levels = {
            tid: {dim: str(chosen[dim]) for dim in bank["dimensions"]}
            for tid, chosen in zip(grid["template_ids"], bank["templates"], strict=True)
        }
        space = summarize(boot.per_template, levels, boot, (0.0, 1.0))
        assert space is not None and space.n_templates == 40
        shares[model] = {d: e.share for d, e in space.dimensions.items()}
        if model == "0.5b":
            cue = space.dimensions["cue"]
            assert cue.best_minus_worst > 0.2
            assert cue.diff_ci_low is not None and cue.diff_ci_low > 0  # cue 3 hurts
    small, large = shares["0.5b"], shares["1.5b"]
    assert max(small, key=lambda d: small[d] or -1) == "cue"
    assert 0.55 <= (small["cue"] or 0) <= 0.70
    assert all(v is None or v < 0.1 for d, v in small.items() if d != "cue")
    assert all(v is None or v <= 0.20 for v in large.values())
