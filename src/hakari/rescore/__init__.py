"""Re-scoring finished runs and outside outputs, and IFTEval's automatic error analysis.

Used elsewhere: `register` (mounts `score`, `analyze`, `meta` on the CLI), `score_run`,
`score_file`, `analyze_run`.
"""

from hakari.rescore.analyze import analyze_run
from hakari.rescore.files import FileFields, score_file
from hakari.rescore.run_dir import score_run

__all__ = ["FileFields", "analyze_run", "score_file", "score_run"]
