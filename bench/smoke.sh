#!/usr/bin/env bash
# Every bench's smoke mode: `bench/*.py --smoke` (a new bench joins by having one; `_`-files are
# helpers). Each runs at a tiny scale and fails when its computation breaks, never because a noisy
# figure misses its target (docs/benchmarks.md). A bench's output is shown whole when it fails.
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=()
for bench in bench/*.py; do
  [[ $(basename "$bench") == _* ]] && continue
  start=$SECONDS
  if "$python" "$bench" --smoke >"$log" 2>&1; then
    echo "ok     $bench --smoke ($((SECONDS - start)) s): $(grep -m1 '^skipped' "$log" || echo checks passed)"
  else
    echo "FAILED $bench --smoke ($((SECONDS - start)) s):"
    sed 's/^/    /' "$log"
    failed+=("$bench")
  fi
done
if ((${#failed[@]})); then
  echo "bench smoke modes failed: ${failed[*]}"
  exit 1
fi
