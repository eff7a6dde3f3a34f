"""Template covariates: the levels of each template on the dimensions of its prompt space
(answer cue, enumerator, separator, ...), as the prior of the template shrinkage.

Templates that share an answer cue or an enumerator tend to score alike (on real grids the
answer cue alone can explain most of the variance over templates). With the levels known,
the shrinkage of `shrinkage.TemplateShrinkage` pulls a template's deviation from the mean
towards the fitted deviation of its levels rather than towards 0, so a template seen on
few cells borrows from the templates that share its levels, not from all of them.

The decision a reader must know: **which dimensions enter is chosen from the data**, by
forward selection on the Bayesian information criterion of the shrinkage's own marginal
likelihood (`d_t ~ N(x_t' beta, sigma^2 + v_t)`, sigma profiled on a grid). A dimension
that explains nothing is not used, so without covariates, or with levels unrelated to the
scores, the estimate is the same as without them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

# A ridge on the level effects, relative to the Gram matrix's scale: keeps a level held by
# a single template from being fitted exactly.
_RIDGE = 1e-3


def covariate_design(
    template_ids: Sequence[str], levels: Mapping[str, Mapping[str, str]] | None
) -> dict[str, np.ndarray]:
    """Dimension -> (T, L - 1) centred one-hot columns of its levels (the first level is
    the reference), for every dimension with at least two levels over the templates; a
    template without a level on a dimension gets a level of its own there."""
    if not levels:
        return {}
    dimensions = sorted({d for t in template_ids for d in levels.get(t, {})})
    out: dict[str, np.ndarray] = {}
    for dim in dimensions:
        values = [str(levels.get(t, {}).get(dim, "\x00missing")) for t in template_ids]
        distinct = sorted(set(values))
        if len(distinct) < 2:
            continue
        onehot = np.array([[v == level for level in distinct[1:]] for v in values], dtype=float)
        out[dim] = onehot - onehot.mean(axis=0, keepdims=True)
    return out


def profile_fit(
    centre: np.ndarray, variance: np.ndarray, sigmas: np.ndarray, columns: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """(loglik (G,), fitted prior means (G, T)) of `centre ~ N(X beta, sigma^2 + v)` at each
    sigma of the grid, beta by (ridged) generalised least squares."""
    total = np.maximum(sigmas[:, None] ** 2 + variance[None, :], 1e-300)  # (G, T)
    if columns is None or columns.shape[1] == 0:
        fitted = np.zeros_like(total)
    else:
        weights = 1.0 / total
        gram = np.einsum("tp,gt,tq->gpq", columns, weights, columns)
        scale = np.trace(gram, axis1=1, axis2=2)[:, None, None] / columns.shape[1]
        gram = gram + _RIDGE * np.maximum(scale, 1e-300) * np.eye(columns.shape[1])[None]
        rhs = np.einsum("tp,gt,t->gp", columns, weights, centre)
        beta = np.linalg.solve(gram, rhs[:, :, None])[:, :, 0]
        fitted = beta @ columns.T
    residual = centre[None, :] - fitted
    loglik = -0.5 * np.sum(np.log(total) + residual**2 / total, axis=1)
    return loglik, fitted


def select_columns(
    design: Mapping[str, np.ndarray],
    centre: np.ndarray,
    variance: np.ndarray,
    sigmas: np.ndarray,
) -> tuple[list[str], np.ndarray | None]:
    """Forward selection of dimensions by BIC (each level effect a parameter, sigma one
    for every candidate): the chosen dimensions and their stacked columns (None: none)."""
    n = centre.size
    chosen: list[str] = []
    columns: np.ndarray | None = None
    best = float(np.max(profile_fit(centre, variance, sigmas, None)[0]))
    while True:
        step: tuple[float, str, np.ndarray] | None = None
        for dim, block in design.items():
            if dim in chosen:
                continue
            trial = block if columns is None else np.hstack([columns, block])
            if trial.shape[1] >= n - 1:
                continue
            loglik = float(np.max(profile_fit(centre, variance, sigmas, trial)[0]))
            score = loglik - 0.5 * trial.shape[1] * np.log(n)
            if score > best and (step is None or score > step[0]):
                step = (score, dim, trial)
        if step is None:
            return chosen, columns
        best = step[0]
        chosen.append(step[1])
        columns = step[2]
