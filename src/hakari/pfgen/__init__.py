"""pfgen-bench in hakari: the reference scorer reproduced exactly (and fast), honest
uncertainty, generation with the reference's prompts, reference-set building, data
fetching and a leaderboard. See docs/pfgen.md.

Modules: `data.py` (a pfgen-bench data folder), `fetch.py` (`fetch-data` at a pinned
commit), `prompts.py` (prompts exactly as the reference builds them), `generate.py` (answers
from a hakari backend), `trials.py` (trials files in the upstream format), `ngram.py`
(fluency and truthfulness, vectorised), `tables.py` (the n-gram tables' cache),
`helpfulness.py` (a question's keyword rules), `scoring.py` (trials → scores and the
reference's numbers), `uncertainty.py` (honest uncertainty of a score), `report.py` (the
summary of one trials file), `leaderboard.py` (models ranked with CIs), `reference_build.py`
(a reference answer set, §3.2), `run.py` (the commands as functions, every input checked
first).
"""
