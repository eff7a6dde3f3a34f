"""Scores of model outputs against references.

`corpus/`: the task metrics computed over a whole split (accuracy, MCC, Pearson, Spearman,
SQuAD EM/F1), one registered metric per file. `samples/`: per-sample reference metrics,
reward models (IFTEval's scorers) as a registry of families that load their models lazily.
Nothing here knows tasks: scores are functions of answers and references, so the task
layer (and everything above it) may use them.
"""
