"""results.json's pooled records: a task family's members pooled into one score per
template (`families`), and a family's leaderboard view (`leaderboards`:
`runner/leaderboard.py`)."""

from __future__ import annotations

from hakari._util.records import Record


class FamilyScore(Record):
    """One way of pooling a family's members into one score per template, and the
    spread of those scores over the templates the members share."""

    per_template: dict[str, float]
    """Template id -> the pooled score."""
    mean: float
    """Mean of the pooled scores over the templates."""
    std: float
    """Population std (ddof=0) over the templates."""
    sharpe: float
    """mean / (alpha · std + 1), alpha of the run."""
    min: float
    """The lowest template's pooled score."""
    max: float
    """The highest template's pooled score."""
    ci_low: float | None = None
    """The mean's interval over templates × items (the members' bootstrap replicates,
    items resampled in each member, templates resampled together); null without one."""
    ci_high: float | None = None
    """The interval's upper end; null without one."""


class FamilySummary(Record):
    """A task family (`--tasks jmmlu`) pooled over its members, for one model, decoding
    and metric. Reports differ on which mean they give: both are here."""

    members: list[str]
    """The member tasks pooled (the subjects run)."""
    n_questions: int
    """Instances over all members."""
    over_questions: FamilyScore
    """Every question weighs the same (the members' scores weighted by their instances):
    the accuracy over the union of the members' questions ("micro" mean)."""
    over_subjects: FamilyScore
    """Every member weighs the same (the mean of the members' scores, "macro" mean)."""


class LeaderboardCategory(Record):
    """One category of a leaderboard (llm-jp-eval's NLI, QA, ...): the mean of its sets'
    scores, each set on its leaderboard metric, every set weighing the same."""

    members: dict[str, str]
    """The category's sets that ran -> the metric each is scored with."""
    missing: list[str]
    """The category's sets that did not run; any makes the category partial."""
    partial: bool
    """Whether sets are missing: the average is then over fewer sets than the
    leaderboard's, not its number."""
    reference: float | None
    """The mean of the sets' scores on the leaderboard's own template; null when it
    did not run."""
    score: FamilyScore | None
    """The mean of the sets' scores per template (the templates every set ran), over
    the templates; null when no set ran."""


class Leaderboard(Record):
    """A task family's leaderboard view (`leaderboard:` in its family file): its
    categories, and Nejumi's mean of the 0- and 2-shot scores."""

    source: str
    """Whose categories these are (e.g. llm-jp-eval v1.3.0)."""
    reference_template: str
    """The template that is the leaderboard's own prompt (e.g. `0-4`)."""
    categories: dict[str, LeaderboardCategory]
    """Category -> its average, in the leaderboard's order (categories none of whose
    sets ran are left out)."""
    nejumi: FamilyScore | None
    """Per wording (`<wording>` of the `<wording>-<shots>` ids), the mean over the sets
    run of each set's (0-shot + 2-shot) / 2; summarised over the wordings. Null when no
    wording ran both."""
    nejumi_reference: float | None
    """`nejumi` on the leaderboard's wording (the reference template's)."""
