#!/usr/bin/env bash
# Build the environment of the *producers*: the tools whose real output `hakari import`
# reads (issue 35), run by tests/e2e/test_producers.py and tests/helpers/producers.py:
# - lm-evaluation-harness 0.4.13 with its `hf` model, inspect_ai (its `hf/` provider) and
#   evalstats, in ./.venv-producers (or $HAKARI_PRODUCERS_VENV), on Python 3.11 with the
#   CPU torch 2.13.0;
# - Every Eval Ever (its converters and validator, with inspect_ai to read .eval logs) in
#   a second venv inside it, <venv>/eee, on Python >= 3.12.
#
# Why not hakari's main venv, and why two (measured with `pip install --dry-run` against
# the main venv's freeze; docs/dependencies.md): lm_eval[hf] and evalstats would fit, but
# inspect-ai 0.3.285 needs fsspec<=2026.6.0 (main: 2026.9.0, which datasets needs), and
# every-eval-ever 0.3.0 needs Python >= 3.12 (main: 3.11), huggingface-hub<2 (main: 2.4)
# and rich<15 (main: 15.0). The producers need torch, whose CPU build lies on this
# machine's disk for Python 3.11 only (any other resolve downloads the CUDA build, GBs),
# so they stay on 3.11; every-eval-ever needs no torch and gets its own 3.12 venv.
#
# Reproducible: every package of each venv is held at scripts/producers.lock and
# scripts/producers-eee.lock (written by --relock from a clean resolve). Idempotent: a
# stamp in the venv records a hash of the locks, the pins and the interpreters' versions;
# a run that finds the same stamp does nothing (delete the venv to force a rebuild).
#
#   bash scripts/install-producers.sh           # build ./.venv-producers, or find it up to date
#   bash scripts/install-producers.sh --relock  # resolve afresh and rewrite both locks
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${HAKARI_PRODUCERS_VENV:-.venv-producers}
PY=${PYTHON:-python3}
LOCK=scripts/producers.lock
EEE_LOCK=scripts/producers-eee.lock
TORCH="torch==2.13.0"
PRODUCERS=("lm_eval[hf]==0.4.13" "inspect-ai==0.3.285" "evalstats==0.3.3")
EEE=("every-eval-ever==0.3.0" "inspect-ai==0.3.285")
STAMP=.hakari-producers-stamp

mode=${1:-}
case "$mode" in
  "" | --relock) ;;
  *) echo "usage: $0 [--relock]" >&2; exit 2 ;;
esac

"$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || {
  echo "the producers venv needs Python 3.11 (the CPU torch wheel on disk is for 3.11): $PY" >&2
  exit 1; }
# every-eval-ever declares Requires-Python >= 3.12: the first interpreter that has it
find_py312() {
  local candidate
  for candidate in "${PYTHON_EEE:-}" python3.13 python3.12 \
    "$HOME"/.pyenv/versions/3.13*/bin/python3 "$HOME"/.pyenv/versions/3.12*/bin/python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 \
      && "$candidate" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  return 1
}
PY_EEE=$(find_py312) || {
  echo "every-eval-ever 0.3.0 needs Python >= 3.12 and none was found (set PYTHON_EEE)" >&2
  exit 1; }

pins() {
  cat "$LOCK" "$EEE_LOCK" 2>/dev/null || true
  echo "$TORCH ${PRODUCERS[*]} ${EEE[*]}"
  "$PY" -V; "$PY_EEE" -V
}
stamp=$(pins | sha256sum | cut -c1-16)
pip() { "$1/bin/python" -m pip --disable-pip-version-check -q "${@:2}"; }

build() {
  if [ -d "$VENV" ]; then
    [ -f "$VENV/pyvenv.cfg" ] || { echo "$VENV exists and is not a venv" >&2; exit 1; }
    rm -rf "$VENV"
  fi
  local constrain=() eee_constrain=()
  if [ "$mode" != --relock ]; then
    constrain=(-c "$LOCK")
    eee_constrain=(-c "$EEE_LOCK")
  fi
  "$PY" -m venv "$VENV"
  # torch first and pinned: an unpinned torch pulls several GB of CUDA wheels
  pip "$VENV" install "${constrain[@]}" "$TORCH"
  pip "$VENV" install "${constrain[@]}" "$TORCH" "${PRODUCERS[@]}"
  "$PY_EEE" -m venv "$VENV/eee"
  pip "$VENV/eee" install "${eee_constrain[@]}" "${EEE[@]}"
  if [ "$mode" = --relock ]; then
    { echo "# Every package of the producers venv (Python 3.11): scripts/install-producers.sh --relock."
      pip "$VENV" freeze; } >"$LOCK"
    { echo "# Every package of the producers' every-eval-ever venv (Python >= 3.12):"
      echo "# scripts/install-producers.sh --relock."
      pip "$VENV/eee" freeze; } >"$EEE_LOCK"
    stamp=$(pins | sha256sum | cut -c1-16)
  fi
  pip "$VENV" check
  pip "$VENV/eee" check
  if "$VENV/bin/python" -c 'import torch, sys; sys.exit(torch.version.cuda is not None)'; then :; else
    echo "$VENV has a CUDA build of torch: install the CPU wheel first" >&2; exit 1
  fi
  "$VENV/bin/python" -c "import lm_eval, inspect_ai, evalstats, transformers" || {
    echo "the producers do not import in $VENV" >&2; exit 1; }
  "$VENV/eee/bin/python" -c "import every_eval_ever, inspect_ai" || {
    echo "every-eval-ever does not import in $VENV/eee" >&2; exit 1; }
  echo "$stamp" >"$VENV/$STAMP"
}

if [ "$mode" = --relock ] || [ ! -x "$VENV/bin/python" ] || [ ! -x "$VENV/eee/bin/python" ] \
  || [ "$(cat "$VENV/$STAMP" 2>/dev/null)" != "$stamp" ]; then
  build
  echo "producers venv built: $VENV (every-eval-ever in $VENV/eee)"
else
  echo "producers venv up to date: $VENV ($stamp)"
fi
"$VENV/bin/python" -c 'import importlib.metadata as m; print(*(f"{p} {m.version(p)}" for p in ("lm_eval", "inspect_ai", "evalstats", "torch", "transformers")), sep=", ")'
"$VENV/eee/bin/python" -c 'import importlib.metadata as m, sys; print(*(f"{p} {m.version(p)}" for p in ("every_eval_ever", "inspect_ai")), "Python " + sys.version.split()[0], sep=", ")'
