"""Scores of model outputs against references.

`corpus/`: the task metrics computed over a whole split (accuracy, MCC, Pearson, Spearman,
SQuAD EM/F1), one registered metric per file. `samples/`: per-sample reference metrics,
reward models (IFTEval's scorers) as a registry of families that load their models lazily.
`chance.py`: the chance-rate baseline (the fallback answer scored by the task's metrics).
"""
