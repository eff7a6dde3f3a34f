"""Where the tests find the repository, its stand-ins and `../shared` (the data CI puts
beside the checkout; tests that need it skip with a reason when it is absent)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
STAND_INS = REPO / "tests" / "stand_ins"
FIXTURES = REPO / "tests" / "fixtures"
# a results.json of an older format (the published Japanese run before issue 7)
OLDER_RESULTS = FIXTURES / "older_results" / "japanese-zero-shot.previous.results.json"
