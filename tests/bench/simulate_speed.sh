#!/bin/bash
# End-to-end simulate speed per sample, as a user meets it (issue 16's measure):
#   tests/bench/simulate_speed.sh [MOEX_CLI] [STEPS=401] [RUNS=3]
# Per sample: cold = wall of `simulate --steps 10` (load, placement, 10 steps, summary, process
# start included); per step = (wall of --steps STEPS minus wall of --steps 1) / (STEPS - 1).
# Medians of RUNS runs. Prints one row per sample in samples/scenarios.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
cli="${1:-$here/build/dev/app/moex-cli/moex-cli}"
steps="${2:-401}"
runs="${3:-3}"
wall() {  # seconds of one run of moex-cli "$@"
  local t0 t1
  t0=$(date +%s.%N); "$cli" "$@" >/dev/null; t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf "%-40s %10s %12s\n" sample "cold_ms" "per_step_ms"
for f in "$here"/samples/scenarios/*.yaml; do
  cold=$(for _ in $(seq "$runs"); do wall simulate "$f" --steps 10; done | median)
  one=$(for _ in $(seq "$runs"); do wall simulate "$f" --steps 1; done | median)
  many=$(for _ in $(seq "$runs"); do wall simulate "$f" --steps "$steps"; done | median)
  awk -v n="$(basename "$f" .yaml)" -v c="$cold" -v o="$one" -v m="$many" -v s="$steps" \
    'BEGIN {printf "%-40s %10.1f %12.3f\n", n, c * 1000, (m - o) * 1000 / (s - 1)}'
done
