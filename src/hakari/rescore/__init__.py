"""Re-scoring finished runs and outside outputs, and IFTEval's automatic error analysis.

Used elsewhere: `register` (mounts `score`, `analyze`, `meta` on the CLI), `score_run`,
`score_file`, `analyze_run`.

Modules: `common.py` (what both re-scorers share), `run_dir.py` (`hakari score RUN_DIR`:
scores added to a finished run), `files.py` (`hakari score --input`: outputs made
elsewhere), `analyze.py` (IFTEval's error analysis).
"""

from hakari.rescore.analyze import analyze_run
from hakari.rescore.files import FileFields, score_file
from hakari.rescore.run_dir import score_run

__all__ = ["FileFields", "analyze_run", "score_file", "score_run"]
