"""Tasks as data: a task file (YAML) → validated spec → templates × instances → prompts.

Modules: `spec.py` (the task file schema, pydantic), `loader.py` (finding, parsing and
validating task files against their data), `data.py` (a task's instances: inline, local
files or a hub dataset), `families.py` (one task file for many subjects), `choices.py`
(multiple choice as an answer type), `spacespec.py` (a task's `space:` block and its
built-in levels), `spacelevels.py` (one type per kind of dimension, with its parse and
render), `spacesample.py` (which templates `space:N` takes) and `space.py` (the templates
built from them), `duplicates.py` (rows that repeat an earlier row), `prompts.py` (template ×
instance expansion, streamed), `extract.py` (answer extraction: regex, then the task's
fallback rule), `chance.py` (the trivial baselines, from the evaluated golds), `export.py`
(templates × training instances as training data), `builtin/` (the shipped task files),
`jasterspec.py` (the `data.jaster` block: llm-jp-eval's preprocessing as data), `jaster.py`
(that preprocessing: files → samples → splits, and the few-shot text) and `readers/` (the
file formats jaster's sets ship in).
"""
