#!/usr/bin/env bash
# Shows that `pip install 'hakari[vllm]'` resolves: hakari declares ranges (torch>=2.6,
# transformers>=5.0, llguidance>=1.0) that leave room for vLLM's exact pins (vllm 0.33:
# torch==2.14.0, transformers<5.21, llguidance<1.8). A dry run in a throwaway venv: nothing
# is installed, but pip must find one consistent set on the package index.
# Needs the package index; .ci/run calls it with a time limit and reports a timeout
# as "not checked" rather than failing CI on a slow index.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$PY" -m venv "$TMP/venv"
start=$(date +%s)
"$TMP/venv/bin/python" -m pip install --disable-pip-version-check -q --dry-run \
    --report "$TMP/report.json" '.[vllm]'
"$TMP/venv/bin/python" - "$TMP/report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
picked = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in report["install"]}
for name in ("hakari", "vllm", "torch", "transformers", "llguidance", "openai"):
    print(f"{name:14} {picked.get(name, '-')}")
assert "vllm" in picked, "vllm not in the resolved set"
PY
echo "hakari[vllm] resolves ($(( $(date +%s) - start )) s)"
