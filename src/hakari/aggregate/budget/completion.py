"""Completing a partly observed template × instance grid of answers: a latent-class model
fitted by Gibbs sampling, whose draws are multiple imputations of the missing cells.

Each cell holds a *code*: the answer label for label tasks, or a coarse class of the cell's
outcome for other tasks (see `grid`). The model, per instance i with stratum s_i (the gold
label, or a gold bin):

    z_i ~ Categorical(pi[s_i])                      the instance's latent class
    code[t, i] | z_i ~ Categorical(phi[t, z_i])     independently over templates
    phi[t, c] ~ Dirichlet(kappa * phibar[c])        templates shrunk towards the average one

For a label task with K labels and K latent classes, z_i is "what the model makes of
instance i" and phi[t] is template t's confusion matrix from that to its answer: a template
that always answers "1" has equal rows, one that follows the model's reading has a
diagonal; instance difficulty is pi (how the reading relates to the gold). The
*stratified* variant fixes z_i = s_i: each template answers independently given the gold
label (a post-stratified hot deck with shrinkage).

The decision a reader must know: **the imputations are posterior predictive draws,
calibrated to a design-unbiased estimate.** phi, pi, kappa and z are redrawn every sweep
and the missing cells of an instance drawn given its class (so they stay correlated like
real cells); then, per template × stratum, the draws are tilted so that their expected
count of each code equals a difference estimate from that template's own cells (model
prediction plus the mean residual of its observed cells, with a Bayesian bootstrap), see
`_Sampler.calibrated_probabilities`. The cells a template ran are a random sample of the
stratum, so the calibrated totals are unbiased whatever the model, and the model only
decides how good (narrow) they are; the spread over the draws carries the randomness of
the unseen cells, the model's uncertainty and the difference estimate's sampling
variance, which is what makes the intervals of `estimate` honest.

Which variant (stratified or latent, and how many classes) is chosen by held-out
predictive likelihood on instances seen under several templates; with fewer
than two cells per instance nothing tells templates' agreement apart from the prior, and
the stratified variant is used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.special import gammaln

# Concentration values kappa is drawn from (a discrete prior, uniform on the log scale).
KAPPA_GRID = np.geomspace(0.5, 2000.0, 25)
BURN_IN = 150
THIN = 2
# Share of multiply-seen instances whose held-out cell scores a candidate model.
_HOLDOUT_SWEEPS = 60
_RAKE_STEPS = 30
# How far (in standard errors) a latent model must predict held-out cells better than
# the stratified one for the instances to count as informative (`HeldOut`).
EVIDENCE_Z = 2.0


@dataclass(frozen=True, eq=False)
class CodedGrid:
    """The observed cells of a T × N grid as integer codes.

    `codes[t, i]` is the code in [0, n_codes) of an observed cell and -1 for a missing
    one; `strata[i]` in [0, n_strata) the instance's stratum.
    """

    codes: np.ndarray
    strata: np.ndarray
    n_codes: int
    n_strata: int

    def __post_init__(self) -> None:
        if self.codes.ndim != 2 or self.strata.shape != (self.codes.shape[1],):
            raise ValueError("codes must be (T, N) and strata (N,)")
        if self.codes.max(initial=-1) >= self.n_codes or self.codes.min(initial=0) < -1:
            raise ValueError(f"codes must lie in [-1, {self.n_codes})")
        if self.strata.size and (self.strata.min() < 0 or self.strata.max() >= self.n_strata):
            raise ValueError(f"strata must lie in [0, {self.n_strata})")

    @property
    def observed(self) -> np.ndarray:
        return self.codes >= 0

    def cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(template, instance, code) of every observed cell."""
        t, i = np.nonzero(self.observed)
        return t, i, self.codes[t, i]


@dataclass(frozen=True)
class ModelChoice:
    """A variant of the completion model: `n_classes` latent classes, or the strata."""

    name: str
    n_classes: int
    stratified: bool

    @property
    def label(self) -> str:
        return "stratified" if self.stratified else f"latent-{self.n_classes}"


def candidate_models(grid: CodedGrid) -> list[ModelChoice]:
    """The stratified model, and latent models with K and 2K classes (K = codes)."""
    choices = [ModelChoice("stratified", grid.n_strata, True)]
    for n_classes in sorted({max(2, grid.n_codes), 2 * max(2, grid.n_codes)}):
        choices.append(ModelChoice(f"latent-{n_classes}", n_classes, False))
    return choices


class _Sampler:
    """One Gibbs chain of the model on one grid."""

    def __init__(self, grid: CodedGrid, choice: ModelChoice, rng: np.random.Generator) -> None:
        self.grid = grid
        self.choice = choice
        self.rng = rng
        self.T, self.N = grid.codes.shape
        self.K = grid.n_codes
        self.C = choice.n_classes
        self.obs_t, self.obs_i, self.obs_k = grid.cells()
        self.z = self._initial_classes()
        self.kappa = 10.0
        self.phibar = np.full((self.C, self.K), 1.0 / self.K)
        self.pi = np.full((grid.n_strata, self.C), 1.0 / self.C)
        self.phi = self._draw_phi()

    def _initial_classes(self) -> np.ndarray:
        if self.choice.stratified:
            return self.grid.strata.copy()
        # Start from each instance's most frequent code (folded into C classes), which is
        # a reading of the instance the data already suggest; unseen instances at random.
        counts = np.zeros((self.N, self.K))
        np.add.at(counts, (self.obs_i, self.obs_k), 1.0)
        counts += self.rng.random(counts.shape) * 1e-3
        z = counts.argmax(axis=1) % self.C
        unseen = counts.max(axis=1) < 1.0
        z[unseen] = self.rng.integers(0, self.C, int(unseen.sum()))
        if self.C > self.K:  # spread the extra classes: half of each reading moves up by K
            z = z + self.K * (self.rng.random(self.N) < 0.5) * (z + self.K < self.C)
        return z

    def _counts(self) -> np.ndarray:
        flat = (self.obs_t * self.C + self.z[self.obs_i]) * self.K + self.obs_k
        return (
            np.bincount(flat, minlength=self.T * self.C * self.K)
            .reshape(self.T, self.C, self.K)
            .astype(np.float64)
        )

    def _draw_phi(self) -> np.ndarray:
        counts = self._counts()
        pooled = counts.sum(axis=0) + 1.0
        self.phibar = pooled / pooled.sum(axis=1, keepdims=True)
        self.kappa = self._draw_kappa(counts)
        gam = self.rng.gamma(self.kappa * self.phibar[None, :, :] + counts)
        gam = np.maximum(gam, 1e-300)
        return gam / gam.sum(axis=2, keepdims=True)

    def _draw_kappa(self, counts: np.ndarray) -> float:
        """kappa from its discrete conditional: the Dirichlet-multinomial likelihood of
        every template's counts given the average template."""
        prior = KAPPA_GRID[:, None, None] * self.phibar[None, :, :]  # (G, C, K)
        totals = counts.sum(axis=2)  # (T, C)
        loglik = np.sum(
            gammaln(KAPPA_GRID)[:, None, None] - gammaln(KAPPA_GRID[:, None, None] + totals[None]),
            axis=(1, 2),
        ) + np.sum(gammaln(prior[:, None] + counts[None]) - gammaln(prior)[:, None], axis=(1, 2, 3))
        weights = np.exp(loglik - loglik.max())
        return float(self.rng.choice(KAPPA_GRID, p=weights / weights.sum()))

    def _draw_pi(self) -> None:
        flat = self.grid.strata * self.C + self.z
        counts = np.bincount(flat, minlength=self.grid.n_strata * self.C).reshape(
            self.grid.n_strata, self.C
        )
        gam = np.maximum(self.rng.gamma(1.0 + counts), 1e-300)
        self.pi = gam / gam.sum(axis=1, keepdims=True)

    def class_log_posterior(self) -> np.ndarray:
        """(N, C) log p(z_i = c | observed cells of i), unnormalised."""
        if self.choice.stratified:  # the class is the stratum, known
            logp = np.where(np.arange(self.C)[None, :] == self.z[:, None], 0.0, -1e30)
        else:
            logp = np.log(self.pi[self.grid.strata])
        contrib = np.log(self.phi[self.obs_t, :, self.obs_k])  # (n_obs, C)
        for c in range(self.C):
            logp[:, c] += np.bincount(self.obs_i, weights=contrib[:, c], minlength=self.N)
        return logp

    def _draw_z(self) -> None:
        logp = self.class_log_posterior()
        gumbel = -np.log(-np.log(self.rng.random(logp.shape)))
        self.z = np.argmax(logp + gumbel, axis=1)

    def sweep(self) -> None:
        self.phi = self._draw_phi()
        if not self.choice.stratified:
            self._draw_pi()
            self._draw_z()

    def impute(self, calibrate: bool = True) -> np.ndarray:
        """(T, N) codes: the observed ones, and the missing ones drawn from the model,
        calibrated (see `calibrated_probabilities`) unless `calibrate` is False."""
        observed = self.grid.observed
        # Given this sweep's classes: the missing cells of an instance share its class, so
        # they stay correlated as the instance's real cells would be.
        probs = self.phi[:, self.z, :]  # (T, N, K)
        if calibrate:
            post = _normalise(self.class_log_posterior())  # (N, C)
            probs = self.calibrated_probabilities(post, probs)
        cumulative = np.cumsum(probs, axis=2)
        u = self.rng.random((self.T, self.N, 1)) * cumulative[:, :, -1:]
        drawn = np.minimum((u > cumulative).sum(axis=2), self.K - 1)
        return np.where(observed, self.grid.codes, drawn)

    def calibrated_probabilities(self, post: np.ndarray, probs: np.ndarray) -> np.ndarray:
        """The missing cells' code probabilities `probs` (given this sweep's classes),
        tilted per template × stratum so that their sum is the difference estimate of the
        missing codes' count:

            sum_missing p(k) + n_missing * sum_obs w_j (1[code_j = k] - p_loo_j(k))

        where p is the model's prediction of a missing cell from all but one of its
        instance's observed cells (posterior-mean answer distributions, classes integrated
        out), p_loo_j the same prediction of observed cell j from the instance's other
        cells, with j's own count left out of its template's distribution, and
        w ~ Dirichlet(1, ..., 1) over the observed cells of that template × stratum (a
        Bayesian bootstrap, redrawn for every imputation). The difference estimate is
        design-consistent whatever the model (the cells were chosen at random within the
        stratum), so a misspecified model costs variance, not bias; the Bayesian bootstrap
        makes the imputations carry that estimate's sampling variance."""
        strata = self.grid.strata
        n_strata = self.grid.n_strata
        t, i = self.obs_t, self.obs_i
        phi_mean, post_mean, own, loo, residual = self._held_out_residuals(post)
        group_obs = t * n_strata + strata[i]
        n_groups = self.T * n_strata
        weights = self.rng.gamma(1.0, size=t.size)
        weight_sum = np.bincount(group_obs, weights=weights, minlength=n_groups)
        weighted = np.stack(
            [
                np.bincount(group_obs, weights=weights * residual[:, c], minlength=n_groups)
                for c in range(self.K)
            ],
            axis=1,
        )  # (G, K)
        # One pseudo-cell per group, drawn from the model's own prediction (a Dirichlet-
        # process posterior with concentration 1 around the model rather than the plain
        # Bayesian bootstrap): when every observed cell of a template agrees, the unseen
        # ones may still differ, and the interval must not collapse to a point.
        counts_obs = np.bincount(group_obs, minlength=n_groups)
        mean_loo = (
            np.stack(
                [
                    np.bincount(group_obs, weights=loo[:, c], minlength=n_groups)
                    for c in range(self.K)
                ],
                axis=1,
            )
            / np.maximum(counts_obs, 1)[:, None]
        )
        pseudo_code = _draw_codes(mean_loo, self.rng)
        pseudo_weight = self.rng.gamma(1.0, size=n_groups)
        weighted += pseudo_weight[:, None] * (np.eye(self.K)[pseudo_code] - mean_loo)
        # A template with no cell run in a stratum is calibrated to the stratum's own
        # difference estimate (the mean residual of every template's cells in it, with
        # the same Bayesian bootstrap weights): left to the model alone, its cells kept
        # the model's bias (a strong stub's accuracy pulled to the labels' uniform prior,
        # -0.05 of the mean with 4 labels over 20 templates and 80 cells)
        stratum_residual = _group_sums(strata[i], weights[:, None] * residual, n_strata)
        stratum_residual /= np.maximum(np.bincount(strata[i], weights, n_strata), 1e-300)[:, None]
        weight_sum = weight_sum + pseudo_weight
        mean_residual = weighted / weight_sum[:, None]
        missing = ~self.grid.observed
        miss_t, miss_i = np.nonzero(missing)
        group_miss = miss_t * n_strata + strata[miss_i]
        n_missing = np.bincount(group_miss, minlength=n_groups).astype(np.float64)
        # A missing cell is predicted from all but one (random) observed cell of its
        # instance, as an observed cell is from all but itself: both predictions then see
        # the same number of other templates, and the residuals of the observed cells
        # measure the bias of the missing cells' predictions (else a model that is more
        # wrong with more cells, e.g. too sure that templates agree, leaves a bias).
        dropped = _one_cell_per_instance(i, self.N, self.rng)  # index into the obs cells
        post_drop = post_mean.copy()
        has = dropped >= 0
        post_drop[has] = _normalise(np.log(np.maximum(post_mean[has], 1e-300)) - own[dropped[has]])
        marginal = np.einsum("nc,nck->nk", post_drop[miss_i], phi_mean[miss_t])  # (n_miss, K)
        predicted = _group_sums(group_miss, marginal, n_groups)
        p = probs[miss_t, miss_i]  # (n_miss, K), given the classes
        has_obs = counts_obs > 0
        unseen = stratum_residual[np.arange(n_groups) % n_strata]
        target = predicted + n_missing[:, None] * np.where(has_obs[:, None], mean_residual, unseen)
        target = np.maximum(target, 1e-6 * np.maximum(n_missing, 1.0)[:, None])
        target *= (n_missing / np.maximum(target.sum(axis=1), 1e-300))[:, None]
        out = probs.copy()
        out[miss_t, miss_i] = _rake(p, group_miss, target, n_groups)
        return out

    def _held_out_residuals(self, post: np.ndarray) -> tuple[np.ndarray, ...]:
        """For `calibrated_probabilities`: the templates' posterior-mean answer
        distributions (T, C, K), the instances' class posteriors (N, C), each observed
        cell's own log evidence per class (n_obs, C), its held-out prediction and its
        residual (n_obs, K)."""
        strata = self.grid.strata
        t, i, k = self.obs_t, self.obs_i, self.obs_k
        # Predictions use each template's posterior-mean answer distributions; an observed
        # cell is predicted as if it had not been seen: its own count taken out of its
        # template's distribution, its own evidence out of its instance's class posterior
        # (else the residuals would be too small and the intervals too narrow).
        alpha = self.kappa * self.phibar[None, :, :] + self._counts()  # (T, C, K)
        phi_mean = alpha / alpha.sum(axis=2, keepdims=True)
        if self.choice.stratified:
            post_mean = post
        else:
            logp = np.log(self.pi[strata])
            log_phi = np.log(phi_mean[t, :, k])  # (n_obs, C)
            for c in range(self.C):
                logp[:, c] += np.bincount(i, weights=log_phi[:, c], minlength=self.N)
            post_mean = _normalise(logp)
        own = np.log(phi_mean[t, :, k])  # (n_obs, C)
        loo_post = _normalise(np.log(np.maximum(post_mean[i], 1e-300)) - own)
        alpha_loo = alpha[t].copy()  # (n_obs, C, K)
        alpha_loo[np.arange(t.size), self.z[i], k] -= 1.0
        alpha_loo = np.maximum(alpha_loo, 1e-12)
        phi_loo = alpha_loo / alpha_loo.sum(axis=2, keepdims=True)
        loo = np.einsum("nc,nck->nk", loo_post, phi_loo)  # (n_obs, K)
        residual = np.eye(self.K)[k] - loo
        return phi_mean, post_mean, own, loo, residual

    def predictive(self, t: np.ndarray, i: np.ndarray) -> np.ndarray:
        """(len(t), K) p(code[t, i] = k | everything but that cell), averaged over z_i's
        current posterior (used to score held-out cells)."""
        post = _normalise(self.class_log_posterior()[i])
        return np.einsum("nc,nck->nk", post, self.phi[t])


def _normalise(logp: np.ndarray) -> np.ndarray:
    """Rows of unnormalised log probabilities -> probabilities."""
    p = np.exp(logp - logp.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def _draw_codes(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One code per row of probabilities (rows that sum to 0 give code 0)."""
    cumulative = np.cumsum(probs, axis=1)
    u = rng.random((probs.shape[0], 1)) * cumulative[:, -1:]
    return np.minimum((u > cumulative).sum(axis=1), probs.shape[1] - 1)


def _group_sums(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """(n_groups, K): the sums of the rows of `values` (n, K) by their group."""
    columns = range(values.shape[1])
    return np.stack(
        [np.bincount(group, weights=values[:, c], minlength=n_groups) for c in columns], axis=1
    )


def _one_cell_per_instance(instance: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """For each instance, the index (into the observed cells) of one of its observed cells
    chosen at random; -1 for an instance with none."""
    order = rng.permutation(instance.size)
    chosen = np.full(n, -1, dtype=np.int64)
    chosen[instance[order]] = order  # the last write per instance wins: a random one
    return chosen


def _rake(p: np.ndarray, groups: np.ndarray, target: np.ndarray, n_groups: int) -> np.ndarray:
    """Rows of `p` (each a distribution over K codes) rescaled per code and group so that
    each group's column sums reach `target[group]` (iterative proportional fitting: the
    closest distributions to `p` in Kullback-Leibler divergence with those sums)."""
    q = np.maximum(p, 1e-12)
    q /= q.sum(axis=1, keepdims=True)
    membership = sparse.csr_matrix(
        (np.ones(groups.size), (groups, np.arange(groups.size))), shape=(n_groups, groups.size)
    )
    for _ in range(_RAKE_STEPS):
        factor = target / np.maximum(membership @ q, 1e-300)
        q = q * factor[groups]
        q /= q.sum(axis=1, keepdims=True)
        if np.max(np.abs(factor - 1.0)) < 1e-3:
            break
    return q


def _fit_chain(grid: CodedGrid, choice: ModelChoice, rng: np.random.Generator) -> _Sampler:
    sampler = _Sampler(grid, choice, rng)
    for _ in range(BURN_IN):
        sampler.sweep()
    return sampler


def pooled_share(observed: np.ndarray, strata: np.ndarray) -> float:
    """How much of the unseen cells' calibration rests on the model's prior rather than
    on the templates' own cells: the mean over template × stratum groups, weighted by
    their unseen cells, of 1 / (cells run + 1), the weight of the calibration's pseudo-
    cell (`_Sampler.calibrated_probabilities`); 0 for a full grid."""
    n_strata = int(strata.max()) + 1 if strata.size else 1
    onehot = np.eye(n_strata)[strata]  # (N, S)
    run = observed.astype(np.float64) @ onehot  # (T, S)
    unseen = (~observed).astype(np.float64) @ onehot
    if unseen.sum() == 0:
        return 0.0
    return float((unseen / (run + 1.0)).sum() / unseen.sum())


def held_out_cells(grid: CodedGrid, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(templates, instances): one observed cell, chosen at random, of each instance
    seen at least twice (empty when none is)."""
    observed = grid.observed
    multi = np.flatnonzero(observed.sum(axis=0) >= 2)
    rng = np.random.default_rng(seed)
    held_t = np.array([rng.choice(np.flatnonzero(observed[:, i])) for i in multi], dtype=np.int64)
    return held_t, multi


def held_out_scores(
    grid: CodedGrid, choice: ModelChoice, cells: tuple[np.ndarray, np.ndarray], seed: int
) -> np.ndarray:
    """The log predictive probability of each held-out cell (`held_out_cells`) under the
    variant fitted without them: how well it predicts an unseen cell from the instance's
    other cells."""
    held_t, multi = cells
    held_codes = grid.codes[held_t, multi]
    train = grid.codes.copy()
    train[held_t, multi] = -1
    rng = np.random.default_rng(seed)
    sampler = _fit_chain(CodedGrid(train, grid.strata, grid.n_codes, grid.n_strata), choice, rng)
    total = np.zeros(multi.size)
    for _ in range(_HOLDOUT_SWEEPS):
        sampler.sweep()
        total += sampler.predictive(held_t, multi)[np.arange(multi.size), held_codes]
    return np.log(total / _HOLDOUT_SWEEPS)


@dataclass(frozen=True)
class HeldOut:
    """What the held-out cells said of the candidate models."""

    scores: dict[str, float]  # model -> mean log predictive probability
    evidence: float | None  # z of the best latent model's gain over the stratified one

    @property
    def instances_inform(self) -> bool:
        """Whether an instance's other cells predict its unseen ones better than its
        template and stratum alone (a latent model's gain is significant)."""
        return self.evidence is not None and self.evidence >= EVIDENCE_Z


def choose_model(grid: CodedGrid, seed: int) -> tuple[ModelChoice, HeldOut]:
    """The candidate with the best held-out score (the stratified one when nothing is
    held out or it ties), and every candidate's score on the same held-out cells."""
    candidates = candidate_models(grid)
    cells = held_out_cells(grid, seed)
    if cells[1].size == 0:
        return candidates[0], HeldOut({}, None)
    per_cell = {
        choice.label: held_out_scores(grid, choice, cells, seed + 7919 * k)
        for k, choice in enumerate(candidates)
    }
    scores = {label: float(v.mean()) for label, v in per_cell.items()}
    best, best_score = candidates[0], -np.inf
    for choice in candidates:
        if scores[choice.label] > best_score + 1e-3:
            best, best_score = choice, scores[choice.label]
    baseline = per_cell[candidates[0].label]
    evidence = max(_paired_z(per_cell[c.label] - baseline) for c in candidates[1:])
    return best, HeldOut(scores, evidence)


def _paired_z(gain: np.ndarray) -> float:
    """The mean of per-cell gains over its standard error (0 when they never differ)."""
    spread = float(gain.std(ddof=1)) if gain.size > 1 else 0.0
    if spread == 0.0:
        return 0.0 if float(gain.mean()) <= 0 else float("inf")
    return float(gain.mean() / spread * np.sqrt(gain.size))


def impute(
    grid: CodedGrid,
    n_draws: int,
    seed: int,
    choice: ModelChoice | None = None,
    *,
    calibrate: bool = True,
) -> tuple[np.ndarray, ModelChoice, HeldOut]:
    """`n_draws` completed code grids (n_draws, T, N) from one chain after burn-in,
    thinned, with the model variant used and the held-out scores that chose it."""
    if n_draws < 1:
        raise ValueError("n_draws must be at least 1")
    held_out = HeldOut({}, None)
    if choice is None:
        choice, held_out = choose_model(grid, seed)
    rng = np.random.default_rng(seed)
    sampler = _fit_chain(grid, choice, rng)
    draws = np.empty((n_draws, *grid.codes.shape), dtype=np.int64)
    for m in range(n_draws):
        for _ in range(THIN):
            sampler.sweep()
        draws[m] = sampler.impute(calibrate)
    return draws, choice, held_out
