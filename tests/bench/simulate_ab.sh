#!/bin/bash
# Two moex-cli builds against each other on one sample, in alternating runs (this VM's speed moves
# within minutes, so a before/after pair taken apart in time compares moments, not builds):
#   tests/bench/simulate_ab.sh OLD_MOEX_CLI NEW_MOEX_CLI [SCENARIO] [STEPS=41] [PAIRS=5]
# Per run: per step = (wall of `simulate --steps STEPS` - wall of `--steps 1`) / (STEPS - 1).
# Prints each build's median and its runs.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
old="$1"
new="$2"
scenario="${3:-$here/samples/scenarios/deepseek-r1-decode-nvl72.yaml}"
steps="${4:-41}"
pairs="${5:-5}"
wall() {  # seconds of one run of "$@"
  local t0 t1
  t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'
}
perstep() {  # ms per step of build $1
  local one many
  one=$(wall "$1" simulate "$scenario" --steps 1)
  many=$(wall "$1" simulate "$scenario" --steps "$steps")
  awk -v a="$one" -v b="$many" -v n="$steps" 'BEGIN {printf "%.2f\n", (b - a) * 1000 / (n - 1)}'
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
a=()
b=()
for _ in $(seq "$pairs"); do
  a+=("$(perstep "$old")")
  b+=("$(perstep "$new")")
done
echo "old: median $(printf '%s\n' "${a[@]}" | median) ms per step (${a[*]})"
echo "new: median $(printf '%s\n' "${b[@]}" | median) ms per step (${b[*]})"
