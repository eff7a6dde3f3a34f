#!/usr/bin/env bash
# Build the small venv of Every Eval Ever (every-eval-ever 0.3.0: its converters and its
# validator, with inspect_ai to read .eval logs) at ./.venv-eee (or $HAKARI_EEE_VENV), for
# tests/e2e/test_producers.py and the export's validator check (issue 35). The other
# producers (lm-evaluation-harness, inspect_ai, evalstats) are in hakari's own venv, its
# `dev` extra (scripts/install.sh): they run on the main venv's torch.
#
# Why a venv of its own: every-eval-ever 0.3.0 needs Python >= 3.12 (hakari's venv may be
# 3.11), huggingface-hub<2 and rich<15 (hakari's venv has 2.x and 15). It needs no torch,
# so it stays small (~0.5 GB) and uv builds it in well under a minute from nothing; uv
# comes with hakari's dev extra (.venv/bin/uv, or $UV). The interpreter is the newest
# Python >= 3.12 found ($PYTHON_EEE, python3.13, python3.12, pyenv's versions).
#
# Reproducible: every package is held at scripts/eee.lock (`uv pip sync`: exactly the
# lock, nothing else; --relock resolves afresh and rewrites it). Idempotent: a stamp in the
# venv records a hash of the lock and the interpreter's version; a run that finds the same
# stamp does nothing (delete the venv to force a rebuild).
#
#   bash scripts/install-eee.sh           # build ./.venv-eee, or find it up to date
#   bash scripts/install-eee.sh --relock  # resolve afresh and rewrite scripts/eee.lock
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${HAKARI_EEE_VENV:-.venv-eee}
LOCK=scripts/eee.lock
EEE=("every-eval-ever==0.3.0" "inspect-ai==0.3.285")
STAMP=.hakari-eee-stamp

mode=${1:-}
case "$mode" in
  "" | --relock) ;;
  *) echo "usage: $0 [--relock]" >&2; exit 2 ;;
esac

UV=${UV:-.venv/bin/uv}
[ -x "$UV" ] || UV=$(command -v uv) || {
  echo "no uv: run scripts/install.sh first (hakari's dev extra has it) or set UV" >&2; exit 1; }

# every-eval-ever declares Requires-Python >= 3.12: the first interpreter that has it
find_py312() {
  local candidate
  for candidate in "${PYTHON_EEE:-}" python3.13 python3.12 \
    "$HOME"/.pyenv/versions/3.13*/bin/python3 "$HOME"/.pyenv/versions/3.12*/bin/python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 \
      && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  return 1
}
PY_EEE=$(find_py312) || {
  echo "every-eval-ever 0.3.0 needs Python >= 3.12 and none was found (set PYTHON_EEE)" >&2
  exit 1; }

stamp=$({ cat "$LOCK" 2>/dev/null || true; echo "${EEE[*]}"; "$PY_EEE" -V; } | sha256sum | cut -c1-16)
uv_pip() { "$UV" pip "$1" -q --python "$VENV/bin/python" "${@:2}"; }

build() {
  if [ -d "$VENV" ]; then
    [ -f "$VENV/pyvenv.cfg" ] || { echo "$VENV exists and is not a venv" >&2; exit 1; }
    rm -rf "$VENV"
  fi
  "$UV" venv -q --python "$PY_EEE" "$VENV"
  if [ "$mode" = --relock ]; then
    uv_pip install "${EEE[@]}"
    { echo "# Every package of the every-eval-ever venv (Python >= 3.12, no torch): written by"
      echo "# scripts/install-eee.sh --relock."
      uv_pip freeze; } >"$LOCK"
    stamp=$({ cat "$LOCK"; echo "${EEE[*]}"; "$PY_EEE" -V; } | sha256sum | cut -c1-16)
  else
    uv_pip sync "$LOCK"
  fi
  uv_pip check
  "$VENV/bin/python" -c "import every_eval_ever, inspect_ai" || {
    echo "every-eval-ever does not import in $VENV" >&2; exit 1; }
  echo "$stamp" >"$VENV/$STAMP"
}

if [ "$mode" = --relock ] || [ ! -x "$VENV/bin/python" ] \
  || [ "$(cat "$VENV/$STAMP" 2>/dev/null)" != "$stamp" ]; then
  build
  echo "every-eval-ever venv built: $VENV"
else
  echo "every-eval-ever venv up to date: $VENV ($stamp)"
fi
"$VENV/bin/python" -c 'import importlib.metadata as m, sys; print(*(f"{p} {m.version(p)}" for p in ("every_eval_ever", "inspect_ai")), "Python " + sys.version.split()[0], sep=", ")'
