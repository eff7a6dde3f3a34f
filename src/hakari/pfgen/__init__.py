"""pfgen-bench in hakari: the reference scorer reproduced exactly (and fast), honest
uncertainty, generation with the reference's prompts, reference-set building, data
fetching and a leaderboard. See docs/pfgen.md."""
