"""Bring your own results: other tools' per-sample outputs into a hakari run folder
(`hakari import`), and hakari's runs out to the shared formats (`hakari export`).

One reader a source, each giving the neutral per-cell record (`cells`: model × task ×
decoding × template × item, with the source's scores, answer, gold and text):
`lmeval` (lm-evaluation-harness `--log_samples` output), `inspect_logs` (inspect_ai logs,
read with inspect_ai's own reader), `eee` (Every Eval Ever instance records; also the
export), `table` (a long CSV / JSON Lines / Parquet table, the evalstats layout
included), `grid` (the JSON grids of `../shared/real-grids`). `mapping` turns a source's
task names into hakari tasks and templates; `options` holds the import's options and
the bounded file reading every reader shares.

`finish` is the one place that hands cells to statistics (each grid as the runner's
`GridTask` and `Cells`, every number by the runner's one finisher,
`hakari.runner.estimators`), `filled` the `--fill` variant (the imputed estimator on the
missing cells); `publish` writes the run folder
through the runner's `RunWriter` with the provenance record (`results.ImportRecord`);
`export` writes a run as a long table or as Every Eval Ever records; `api` is both
commands without a console.

The one decision a reader must know: an imported run is a normal run. Its numbers are
computed by the same code, from the same kind of inputs (answers and golds, or per-item
scores), so a native run exported and imported again gives byte-identical statistics.

Also `eee_export.py` (a run as Every Eval Ever records: `hakari export --format eee`),
`scale.py` (per-item scores outside [0, 1] read on a declared `--score-range`) and
`caveats.py` (what an import's statistics cannot measure, said in its notes).
"""
