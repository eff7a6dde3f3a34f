"""Complete answer grids for `bench_budget.py`: the real ones `make_budget_grids.py`
stored under `tests/fixtures/grids/`, and simulated ones.

A `FullGrid` holds every cell of one model × task × decoding and gives the partly
observed `AnswerGrid` of any mask, as a budgeted run would see it; its full-grid
per-template metrics (hakari's own scorers on all cells) are the truth an estimate is
judged against.

Simulation (label answers), a model unlike the estimator's latent classes: instance i
has a gold label g_i, a difficulty theta_i ~ N(0, tau_i^2) and a distractor label;
template t has a label bias b_t ~ N(0, tau_b^2 I), a skill a_t ~ N(ability, tau_a^2), a
discrimination lambda_t = lambda0 exp(N(0, 0.3^2)) and a loading u_t ~ N(0, tau_u^2) on
an instance factor v_i ~ N(0, 1) (template × instance interaction). The answer is the
argmax of

    b_t[k] + 1{k = g_i} lambda_t (a_t + theta_i + u_t v_i) + 1{k = distractor_i} d_i
        + noise * Gumbel

(the Gumbel noise is what no template or instance effect explains). Scenarios are set so
that the per-template accuracy std spans the paper's 0.01-0.2 and so that their other
features (mean, label bias, agreement between templates on an instance) bracket those of
the real grids; `describe` measures those features on any grid, and the bench prints
them for both.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
from scipy.special import expit

from hakari.aggregate.budget.grid import AnswerGrid, label_grid, number_grid, score_grid
from hakari.aggregate.resampling import template_scores
from hakari.backends.fake import hash_choice
from hakari.tasks.loader import load_task
from hakari.tasks.prompts import iter_chunks

# tests read them too: they live with the test fixtures
GRID_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "grids"
# Complete grids made outside the project (see the README there), with a template bank
# that gives each template's level on the dimensions of its prompt space.
EXTERNAL_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "real-grids"
TEMPLATE_BANK = "qwen-template-bank.json"


@dataclass(frozen=True, eq=False)
class FullGrid:
    """Every cell of one model × task × decoding."""

    name: str
    kind: str  # label | score | number
    template_ids: tuple[str, ...]
    metrics: tuple[str, ...]
    answers: np.ndarray  # label: (T, N) codes; number: (T, N) floats; score: unused
    golds: np.ndarray  # label: (N,) codes; number: (N,) floats; score: zeros
    labels: tuple[str, ...] = ()
    item_scores: dict[str, np.ndarray] | None = None  # score: metric -> (T, N)
    language: str = "en"
    source: str = "real"
    # template id -> {dimension: level}: the template covariates, when the grid has them
    levels: dict[str, dict[str, str]] | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.template_ids), len(self.golds)

    def strata(self) -> np.ndarray:
        """What the design stratifies on: the gold code, else nothing."""
        return (
            self.golds.astype(np.int64)
            if self.kind == "label"
            else np.zeros(len(self.golds), np.int64)
        )

    def references(self) -> list[Any]:
        if self.kind == "label":
            return [self.labels[g] for g in self.golds]
        if self.kind == "number":
            return [float(g) for g in self.golds]
        return [None] * len(self.golds)

    def options(self, metric: str) -> dict[str, Any]:
        return {"lang": self.language, "nfkc": True} if metric in ("exact_match", "f1") else {}

    def observed(self, mask: np.ndarray) -> AnswerGrid:
        """The grid a budgeted run sees when it ran the cells of `mask` (T, N)."""
        refs = self.references()
        if self.kind == "label":
            answers = {
                tid: {int(i): self.labels[self.answers[t, i]] for i in np.flatnonzero(mask[t])}
                for t, tid in enumerate(self.template_ids)
            }
            return label_grid(self.template_ids, answers, refs, self.labels)
        if self.kind == "number":
            return number_grid(self.template_ids, np.where(mask, self.answers, np.nan), refs)
        assert self.item_scores is not None
        scores = {m: np.where(mask, v, np.nan) for m, v in self.item_scores.items()}
        return score_grid(self.template_ids, scores, refs)

    def predictions(self, rows: np.ndarray | None = None) -> tuple[dict[str, list[Any]], list[Any]]:
        """Per-template predictions and references (on `rows` when given), for hakari's
        metrics; score grids give their item scores as predictions of `per_item`."""
        cols = np.arange(self.shape[1]) if rows is None else rows
        refs = [self.references()[i] for i in cols]
        if self.kind == "label":
            preds = {
                tid: [self.labels[a] for a in self.answers[t, cols]]
                for t, tid in enumerate(self.template_ids)
            }
        else:
            preds = {
                tid: [float(a) for a in self.answers[t, cols]]
                for t, tid in enumerate(self.template_ids)
            }
        return preds, refs

    def template_truth(
        self, metric: str, rows: np.ndarray | None = None, template: int | None = None
    ):
        """Each template's metric on all instances (or on `rows`): (T,), or a float for
        one `template`."""
        cols = np.arange(self.shape[1]) if rows is None else rows
        picked = range(self.shape[0]) if template is None else [template]
        if self.kind == "score":
            assert self.item_scores is not None
            values = self.item_scores[metric][list(picked)][:, cols].mean(axis=1)
        else:
            preds, refs = self.predictions(cols)
            ids = [self.template_ids[t] for t in picked]
            per_template, _ = template_scores(
                metric, ids, [preds[t] for t in ids], refs, self.options(metric)
            )
            values = np.array(list(per_template.values()))
        return values if template is None else float(values[0])


def load_real(
    path: Path, source: str = "real", levels: Sequence[dict[str, str]] | None = None
) -> FullGrid:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    name = f"{data['model']} {data['task']} {data['decoding']}"
    template_ids = tuple(data["template_ids"])
    common: dict[str, Any] = dict(
        name=name,
        kind=data["kind"],
        template_ids=template_ids,
        metrics=tuple(data["metrics"]),
        language=data["language"],
        source=source,
    )
    if levels is not None:
        if len(levels) != len(template_ids):
            raise ValueError(f"{path}: {len(template_ids)} templates, {len(levels)} in the bank")
        common["levels"] = dict(zip(template_ids, levels, strict=True))
    if data["kind"] == "label":
        return FullGrid(
            answers=np.array(data["answers"], dtype=np.int64),
            golds=np.array(data["golds"], dtype=np.int64),
            labels=tuple(data["labels"]),
            **common,
        )
    if data["kind"] == "number":
        return FullGrid(
            answers=np.array(data["answers"], dtype=np.float64),
            golds=np.array(data["golds"], dtype=np.float64),
            **common,
        )
    scores = {m: np.array(v, dtype=np.float64) for m, v in data["item_scores"].items()}
    n = next(iter(scores.values())).shape[1]
    return FullGrid(
        answers=np.zeros((len(data["template_ids"]), n)),
        golds=np.zeros(n),
        item_scores=scores,
        **common,
    )


def template_bank(directory: Path) -> list[dict[str, str]] | None:
    """Each template's {dimension: level} (levels as their index, a string) in grid order."""
    path = directory / TEMPLATE_BANK
    if not path.exists():
        return None
    bank = json.loads(path.read_text(encoding="utf-8"))
    return [{d: str(t[d]) for d in bank["dimensions"]} for t in bank["templates"]]


def real_grids(names: Sequence[str] | None = None) -> list[FullGrid]:
    """The project's own grids (source "real")."""
    grids = [load_real(p) for p in sorted(GRID_DIR.glob("*.json.gz"))]
    if names:
        grids = [g for g in grids if any(n in g.name for n in names)]
    return grids


def external_grids(
    names: Sequence[str] | None = None, directory: Path = EXTERNAL_DIR
) -> list[FullGrid]:
    """Grids made outside the project (source "external"), with the template bank's levels
    when there is one; empty when the folder is absent."""
    if not directory.is_dir():
        return []
    bank = template_bank(directory)
    paths = sorted(directory.glob("*.json.gz"))
    grids = [load_real(p, "external", bank) for p in paths]
    if names:
        grids = [g for g in grids if any(n in g.name for n in names)]
    return grids


@dataclass(frozen=True)
class Scenario:
    """Parameters of the simulation (see the module docstring)."""

    name: str
    n_templates: int
    n_instances: int
    n_labels: int
    gold_shares: tuple[float, ...] | None = None  # None: uniform
    lambda0: float = 2.0
    ability: float = 0.0
    tau_skill: float = 0.4
    tau_bias: float = 0.5
    tau_instance: float = 1.5
    tau_loading: float = 0.5
    tau_discrimination: float = 0.3
    distractor: float = 0.5
    noise: float = 1.0
    metrics: tuple[str, ...] = ("accuracy",)


SCENARIOS = (
    # A capable model whose templates nearly agree (std ~0.01, the paper's low end).
    Scenario(
        "strong, tiny spread",
        12,
        300,
        3,
        lambda0=2.5,
        ability=1.2,
        tau_skill=0.03,
        tau_bias=0.05,
        tau_loading=0.1,
        tau_discrimination=0.05,
        noise=0.3,
    ),
    # The paper's typical spread (std ~0.05).
    Scenario(
        "moderate spread",
        18,
        300,
        3,
        lambda0=2.0,
        ability=0.8,
        tau_skill=0.15,
        tau_bias=0.3,
        noise=0.7,
    ),
    # A weak model whose templates lean to labels, like the small models on JGLUE.
    Scenario(
        "weak, label-biased", 18, 300, 3, lambda0=1.0, ability=0.3, tau_skill=0.5, tau_bias=2.0
    ),
    # Templates that decide everything (std ~0.2-0.25, the paper's high end).
    Scenario("large spread", 12, 300, 5, lambda0=2.0, ability=0.8, tau_skill=1.2, tau_bias=0.8),
    # JCoLA-like: two labels, 84% acceptable; accuracy and MCC.
    Scenario(
        "imbalanced binary (MCC)",
        14,
        300,
        2,
        gold_shares=(0.16, 0.84),
        lambda0=1.2,
        ability=0.5,
        tau_skill=0.4,
        tau_bias=1.0,
        metrics=("accuracy", "mcc"),
    ),
)


def simulate(
    s: Scenario,
    rng: np.random.Generator,
    *,
    shift: float = 0.0,
    instance: dict[str, np.ndarray] | None = None,
) -> tuple[FullGrid, dict[str, np.ndarray]]:
    """One simulated grid, and its instance draws (pass them back with a `shift` of the
    templates' skill to simulate a second model on the same instances)."""
    T, N, K = s.n_templates, s.n_instances, s.n_labels
    if instance is None:
        shares = np.full(K, 1.0 / K) if s.gold_shares is None else np.asarray(s.gold_shares)
        gold = rng.choice(K, size=N, p=shares)
        instance = {
            "gold": gold,
            "theta": rng.normal(0.0, s.tau_instance, N),
            "factor": rng.normal(0.0, 1.0, N),
            "distractor": (gold + rng.integers(1, max(K, 2), N)) % K,
            "pull": np.abs(rng.normal(0.0, s.distractor, N)),
        }
    gold = instance["gold"]
    bias = rng.normal(0.0, s.tau_bias, (T, K))
    skill = rng.normal(s.ability + shift, s.tau_skill, T)
    discrimination = s.lambda0 * np.exp(rng.normal(0.0, s.tau_discrimination, T))
    loading = rng.normal(0.0, s.tau_loading, T)
    correct = discrimination[:, None] * (
        skill[:, None] + instance["theta"][None, :] + loading[:, None] * instance["factor"][None, :]
    )
    logits = np.repeat(bias[:, None, :], N, axis=1)
    logits[:, np.arange(N), gold] += correct
    logits[:, np.arange(N), instance["distractor"]] += instance["pull"][None, :]
    answers = np.argmax(logits + s.noise * rng.gumbel(size=logits.shape), axis=2)
    grid = FullGrid(
        name=s.name,
        kind="label",
        template_ids=tuple(f"{t}-0" for t in range(T)),
        metrics=s.metrics,
        answers=answers,
        golds=gold,
        labels=tuple(str(k) for k in range(K)),
        source="simulated",
    )
    return grid, instance


def describe(grid: FullGrid) -> dict[str, float]:
    """Features the simulation is calibrated on: mean and std over templates of the first
    metric, the mean share of a template's most frequent answer (label bias), and the
    agreement of two templates on an instance's correctness beyond chance (intra-class
    correlation of correctness)."""
    metric = grid.metrics[0]
    truth = grid.template_truth(metric)
    out = {"mean": float(truth.mean()), "std": float(truth.std())}
    if grid.kind == "label":
        correct = (grid.answers == grid.golds[None, :]).astype(float)
        top = [
            np.bincount(row, minlength=len(grid.labels)).max() / row.size for row in grid.answers
        ]
        out["top_answer_share"] = float(np.mean(top))
    elif grid.kind == "score":
        assert grid.item_scores is not None
        correct = grid.item_scores[metric]
    else:
        return out
    out["icc"] = _icc(correct)
    return out


def _icc(y: np.ndarray) -> float:
    """One-way intra-class correlation over instances (columns) of a T × N matrix."""
    n_templates, _ = y.shape
    instance_means = y.mean(axis=0)
    within = float(((y - instance_means[None, :]) ** 2).sum() / (y.size - y.shape[1]))
    between = float(n_templates * instance_means.var(ddof=1))
    denominator = between + (n_templates - 1) * within
    return (between - within) / denominator if denominator > 0 else 0.0


def population_truth(
    s: Scenario,
    alpha: float,
    *,
    shift: float = 0.0,
    n_templates: int = 2000,
    n_instances: int = 20000,
    seed: int = 12345,
) -> dict[str, dict[str, float]]:
    """Mean, population std and Sharpe score over the *template population* of each
    template's metric on the *instance population* (what a full run's interval targets),
    by Monte Carlo: each template's expected confusion matrix over many instances (the
    answer probabilities are the softmax of the logits, the Gumbel noise integrated out),
    then the metric of that matrix."""
    rng = np.random.default_rng(seed)
    K = s.n_labels
    probe = Scenario(**{**s.__dict__, "n_templates": 1, "n_instances": n_instances})
    _, instance = simulate(probe, rng)
    gold = instance["gold"]
    confusion = np.zeros((n_templates, K, K))  # [template, gold, answer]
    chunk = max(1, 2_000_000 // (n_instances * K))
    for start in range(0, n_templates, chunk):
        t = min(chunk, n_templates - start)
        bias = rng.normal(0.0, s.tau_bias, (t, K))
        skill = rng.normal(s.ability + shift, s.tau_skill, t)
        discrimination = s.lambda0 * np.exp(rng.normal(0.0, s.tau_discrimination, t))
        loading = rng.normal(0.0, s.tau_loading, t)
        correct = discrimination[:, None] * (
            skill[:, None]
            + instance["theta"][None, :]
            + loading[:, None] * instance["factor"][None, :]
        )
        logits = np.repeat(bias[:, None, :], n_instances, axis=1)
        logits[:, np.arange(n_instances), gold] += correct
        logits[:, np.arange(n_instances), instance["distractor"]] += instance["pull"][None, :]
        logits /= s.noise
        probs = np.exp(logits - logits.max(axis=2, keepdims=True))
        probs /= probs.sum(axis=2, keepdims=True)
        for g in range(K):
            confusion[start : start + t, g] = probs[:, gold == g].sum(axis=1) / n_instances
    out = {}
    for metric in s.metrics:
        if metric == "accuracy":
            values = np.trace(confusion, axis1=1, axis2=2)
        else:  # MCC of the expected confusion matrix (sklearn's multiclass formula)
            c = confusion
            trace = np.trace(c, axis1=1, axis2=2)
            true_k, pred_k = c.sum(axis=2), c.sum(axis=1)
            cov_tp = trace - np.einsum("tk,tk->t", true_k, pred_k)
            cov_pp = 1.0 - np.einsum("tk,tk->t", pred_k, pred_k)
            cov_tt = 1.0 - np.einsum("tk,tk->t", true_k, true_k)
            values = cov_tp / np.sqrt(np.maximum(cov_pp * cov_tt, 1e-300))
        mean, std = float(values.mean()), float(values.std())
        out[metric] = {"mean": mean, "std": std, "sharpe": mean / (alpha * std + 1.0)}
    return out


# The gold letters of JMMLU marketing's first 40 questions (`--tasks jmmlu:marketing
# --limit 40`): 13 A, 13 B, 10 C, 4 D, the strata the design balances.
JMMLU_MARKETING_40 = "ACBADAACACCABCCDCCBCADBBBACBABAADAABBBBB"
SKILL_LEVELS = (0.9, 0.6, 0.3)


@dataclass(frozen=True)
class SkillServer:
    """A stub model whose answer is a fixed function of the prompt (template, item, salt)
    and its skill, as an OpenAI-compatible stub server answers: correct with probability
    `expit(logit(skill) + offset_t + ease_i)`, else one of the other letters, each
    equally likely. `offset_t` (sd `template_sd` on the logit) makes the templates differ
    as real ones do; `ease_i` (sd `item_sd`) is the items' difficulty (0: the issue's
    stubs, whose cells are independent given the template)."""

    skill: float
    n_templates: int = 20
    golds: str = JMMLU_MARKETING_40
    letters: str = "ABCD"
    template_sd: float = 0.4
    item_sd: float = 0.0

    @property
    def name(self) -> str:
        items = "" if self.item_sd == 0 else f", item sd {self.item_sd:g}"
        return f"skill {self.skill:g}{items}"


def _unit(*key: object) -> float:
    """A uniform number in [0, 1) that is a fixed function of `key` (sha256)."""
    digest = hashlib.sha256(repr(key).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def skill_grid(server: SkillServer, salt: int) -> FullGrid:
    """The full grid the stub server `server` answers under salt `salt` (a stub's seed)."""
    T, N, K = server.n_templates, len(server.golds), len(server.letters)
    gold = np.array([server.letters.index(g) for g in server.golds], dtype=np.int64)
    normal = NormalDist()
    offset = np.array([normal.inv_cdf(_unit(salt, "template", t) or 0.5) for t in range(T)])
    ease = np.array([normal.inv_cdf(_unit(salt, "item", i) or 0.5) for i in range(N)])
    base = math.log(server.skill / (1.0 - server.skill))
    p = expit(base + server.template_sd * offset[:, None] + server.item_sd * ease[None, :])
    answers = np.empty((T, N), dtype=np.int64)
    for t in range(T):
        for i in range(N):
            if _unit(salt, t, i, "correct") < p[t, i]:
                answers[t, i] = gold[i]
            else:
                wrong = [k for k in range(K) if k != gold[i]]
                answers[t, i] = wrong[int(_unit(salt, t, i, "wrong") * len(wrong))]
    return FullGrid(
        name=f"{server.name} (salt {salt})",
        kind="label",
        template_ids=tuple(f"space-{t}" for t in range(T)),
        metrics=("accuracy",),
        answers=answers,
        golds=gold,
        labels=tuple(server.letters),
        source="skill",
    )


# What the hostile-input rounds' `fake:` stubs answer: one of these, by the prompt's hash.
FAKE_ANSWERS = ("1", "2", "A", "B", "positive", "negative", "yes", "no")


def fake_grid(salt: int, task: str = "demo_sentiment_en") -> FullGrid:
    """The full grid of the demo task (6 templates × 32 reviews) as a hash-answering stub
    answers it: `hash_choice` of the salted prompt over `FAKE_ANSWERS`; an answer that
    is not one of the template's keys falls back to the task's fallback label (so every
    template leans to "positive", as the stub's runs did)."""
    spec = load_task(task).spec
    assert spec.data.instances is not None and spec.labels is not None
    labels = tuple(str(label) for label in spec.labels)
    fallback = str(spec.fallback.value) if spec.fallback is not None else labels[0]
    template_ids = tuple(t.id for t in spec.templates)
    answers = np.zeros((len(template_ids), len(spec.data.instances)), dtype=np.int64)
    golds = np.zeros(len(spec.data.instances), dtype=np.int64)
    for chunk in iter_chunks(spec, spec.templates, spec.data.instances, 100):
        for rp in chunk:
            assert rp.answers is not None
            said = hash_choice(f"{salt}{rp.text}", FAKE_ANSWERS)
            label = str(rp.answers.get(said, fallback))
            answers[template_ids.index(rp.template_id), rp.index] = labels.index(label)
            golds[rp.index] = labels.index(str(rp.gold))
    return FullGrid(
        name=f"fake {task} (salt {salt})",
        kind="label",
        template_ids=template_ids,
        metrics=tuple(str(m) for m in spec.metrics),
        answers=answers,
        golds=golds,
        labels=labels,
        source="fake",
    )
