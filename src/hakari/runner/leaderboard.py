"""A family's leaderboard view (`--tasks jaster`): the leaderboard's category averages
and Nejumi's 0-/2-shot average, pooled as a family is (`runner.families`), each set on
the metric the leaderboard scores it with.

The family file names the view (`leaderboard:` in `tasks/builtin/families/jaster.yaml`):
its categories (category -> set -> metric, llm-jp-eval v1.3.0's
`post_process_score_results`) and the template that is the leaderboard's own prompt
(`0-4`). Template ids are `<wording>-<shots>`.

* A category's score per template is the mean of its sets' scores (every set weighs the
  same, as llm-jp-eval's `mean(scores)`), on the templates all its sets ran; `reference`
  is that mean on the leaderboard's template, `score` the summary over templates with
  the mean's interval over templates × items. A set of the category that did not run is
  named in `missing` and the category marked `partial`: its average is then over fewer
  sets than the leaderboard's and is not the leaderboard's number.
* Nejumi's average per wording is the mean over the sets run of each set's
  (`<wording>-0` + `<wording>-2`) / 2 (Nejumi runs each set 0- and 2-shot and averages
  the two), summarised over the wordings that ran both shot counts. A prompt space's
  generated ids end in their shots level (`llmjp.nejumi.none.0`): their wording is the
  id without it (`llmjp.nejumi.none`), paired the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hakari.errors import HakariInputError
from hakari.results import EvalResults, FamilyScore, Leaderboard, LeaderboardCategory
from hakari.runner.families import DrawsFn, member_every, member_scores, no_draws, pooled_score
from hakari.tasks.families import builtin_family_paths, family_members
from hakari.tasks.loader import Task

NEJUMI_SHOTS = ("0", "2")


def leaderboard_views(
    results: EvalResults, tasks: Sequence[Task], alpha: float, draws: DrawsFn = no_draws
) -> dict[str, dict[str, dict[str, Leaderboard]]] | None:
    """FAMILY -> MODEL -> DECODING -> the view, for the built-in families that name one
    and whose members ran; None when none did."""
    paths = builtin_family_paths()
    out: dict[str, dict[str, dict[str, Leaderboard]]] = {}
    for family in dict.fromkeys(t.family for t in tasks if t.family is not None):
        if family not in paths:
            continue
        spec = family_members(paths[family])[0].get("leaderboard")
        if spec is None:
            continue
        source, reference, categories = _spec(spec, str(paths[family]))
        for model, result in results.models.items():
            decodings = dict.fromkeys(d for r in result.tasks.values() for d in r.decodings)
            for decoding in decodings:
                view = leaderboard(
                    results, model, decoding, categories, (source, reference), alpha, draws
                )
                if view is not None:
                    out.setdefault(family, {}).setdefault(model, {})[decoding] = view
    return out or None


def _spec(raw: Any, file: str) -> tuple[str, str, dict[str, dict[str, str]]]:
    """The `leaderboard:` block: source, reference template, categories."""
    cats = raw.get("categories") if isinstance(raw, Mapping) else None
    if not isinstance(cats, Mapping) or not all(
        isinstance(m, Mapping) and all(isinstance(v, str) for v in m.values())
        for m in cats.values()
    ):
        raise HakariInputError(
            "`leaderboard.categories` must map category -> set -> metric",
            file=file,
            field="leaderboard",
        )
    categories = {str(c): {str(k): v for k, v in m.items()} for c, m in cats.items()}
    return str(raw.get("source", "")), str(raw.get("reference_template", "")), categories


def leaderboard(
    results: EvalResults,
    model: str,
    decoding: str,
    categories: Mapping[str, Mapping[str, str]],
    source_reference: tuple[str, str],
    alpha: float,
    draws: DrawsFn = no_draws,
) -> Leaderboard | None:
    """One model × decoding's view; None when no set of any category ran."""
    source, reference = source_reference
    out: dict[str, LeaderboardCategory] = {}
    for name, sets in categories.items():
        pooled = member_scores(results, model, decoding, list(sets.items()), draws)
        if pooled is None:
            continue
        ids = pooled.template_ids
        equal = np.ones(len(pooled.members))
        score = pooled_score(
            pooled, ids, pooled.scores, equal, member_every(pooled, [[t] for t in ids]), alpha
        )
        out[name] = LeaderboardCategory(
            members={m: sets[m] for m in pooled.members},
            missing=[s for s in sets if s not in pooled.members],
            partial=len(pooled.members) < len(sets),
            reference=score.per_template.get(reference),
            score=score,
        )
    if not out:
        return None
    every_set = {s: m for sets in categories.values() for s, m in sets.items()}
    nejumi = nejumi_score(results, model, decoding, every_set, alpha, draws)
    wording = reference.partition("-")[0]
    return Leaderboard(
        source=source,
        reference_template=reference,
        categories=out,
        nejumi=nejumi,
        nejumi_reference=None if nejumi is None else nejumi.per_template.get(wording),
    )


def nejumi_score(
    results: EvalResults,
    model: str,
    decoding: str,
    sets: Mapping[str, str],
    alpha: float,
    draws: DrawsFn = no_draws,
) -> FamilyScore | None:
    """Per wording, the mean over the sets run of (0-shot + 2-shot) / 2; over the
    wordings that ran both (module docstring). None when none did."""
    pooled = member_scores(results, model, decoding, list(sets.items()), draws)
    if pooled is None:
        return None
    column = {t: i for i, t in enumerate(pooled.template_ids)}
    by_wording: dict[str, dict[str, str]] = {}
    for template_id in pooled.template_ids:
        split = shots_of(template_id)
        if split is not None:
            by_wording.setdefault(split[0], {})[split[1]] = template_id
    wordings = [w for w, shots in by_wording.items() if all(k in shots for k in NEJUMI_SHOTS)]
    if not wordings:
        return None
    pairs = [[by_wording[w][k] for k in NEJUMI_SHOTS] for w in wordings]
    scores = np.stack(
        [pooled.scores[:, [column[t] for t in pair]].mean(axis=1) for pair in pairs], axis=1
    )
    equal = np.ones(len(pooled.members))
    return pooled_score(pooled, wordings, scores, equal, member_every(pooled, pairs), alpha)


def shots_of(template_id: str) -> tuple[str, str] | None:
    """(wording, shots) of a jaster template id: `<wording>-<shots>` (hand-written) or
    `<level>.….<shots>` (a prompt space's); None for any other form."""
    for separator in ("-", "."):
        wording, found, shots = template_id.rpartition(separator)
        if found and wording and shots.isascii() and shots.isdigit():
            return wording, shots
    return None
