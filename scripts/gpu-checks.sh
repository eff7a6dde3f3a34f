#!/usr/bin/env bash
# The checks that need a CUDA GPU, as one run (CI has no GPU; see docs/serving.md):
#   1. the transformers backend's tests on CUDA: every test of the tiny random model runs
#      on each device there is (tests/conftest.py), `-k cuda` picks the CUDA ones, and
#      tests/finetune/test_train_cuda.py trains LoRA and QLoRA adapters on CUDA;
#   2. benchmarks/bench_hf_gpu.py in bf16 on Qwen2.5 shapes (SIZES, default 0.5b: its two
#      tables for three sizes outlast BENCH_TIMEOUT): HFBackend's generation against a bare
#      `generate` loop and transformers' `generate_batch`; its log-likelihood against a
#      plain loop and lm-eval's HFLM (skipped with a line unless lm_eval==0.4.13, and
#      accelerate and requests where the image lacks them, are among the wheels below).
# A machine with no package index gets what it lacks as wheels in .whl/ (installed into
# /tmp/site) and the SmolLM2 tokenizer in .gpu/tokenizer (the tiny model's; the packaged
# model's wheel is too large to carry). Logs go to $OUT (default /tmp/gpu-checks).
# Made beforehand, where pip reaches an index (the image of 2026-11 lacked these):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl \
#       --platform manylinux_2_31_x86_64 --platform manylinux2014_x86_64 \
#       pydantic==2.14.4 pydantic-core annotated-types typing-inspection typing-extensions \
#       llguidance google-re2 platformdirs gguf bitsandbytes
#   mkdir -p .gpu/tokenizer && cp ~/.cache/hakari/models/smollm2-135m-*/{tokenizer.json,\
#       tokenizer_config.json,chat_template.jinja} .gpu/tokenizer/
#
#   bash scripts/gpu-checks.sh            # from the repository root, on the GPU machine
set -u
out=${OUT:-/tmp/gpu-checks}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=src
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site:src
fi
if [ -d .gpu/tokenizer ]; then
    export HAKARI_TEST_TOKENIZER=$PWD/.gpu/tokenizer
fi

{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c "import torch, transformers, peft; print('torch', torch.__version__, \
'transformers', transformers.__version__, 'peft', peft.__version__, 'cuda', torch.cuda.is_available())"
    python3 -c "import bitsandbytes; print('bitsandbytes', bitsandbytes.__version__)"
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

echo "== CUDA tests"
timeout "${TEST_TIMEOUT:-240}" python3 -m pytest -q -p no:cacheprovider -k cuda \
    tests/backends/test_hf.py tests/backends/test_hf_decode.py \
    tests/backends/test_constrained.py tests/backends/test_stop_after.py \
    tests/finetune/test_train_cuda.py --junitxml "$out/cuda-tests.xml" >"$out/cuda-tests.log" 2>&1
echo "rc $?"
tail -n 25 "$out/cuda-tests.log"

echo "== bench_hf_gpu"
timeout "${BENCH_TIMEOUT:-300}" python3 benchmarks/bench_hf_gpu.py --sizes "${SIZES:-0.5b}" \
    >"$out/bench_hf_gpu.log" 2>&1
echo "rc $?"
tail -n 30 "$out/bench_hf_gpu.log"
