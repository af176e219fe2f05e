#!/bin/bash
# Two moex-cli builds against each other on every sample, in alternating runs (this VM's speed
# moves within minutes, so both builds are timed in the same minutes):
#   tests/bench/simulate_all_ab.sh OLD_MOEX_CLI NEW_MOEX_CLI
# cold = wall of `simulate S --steps 10` (median of 5 pairs); per step = (wall of `--steps 401` -
# wall of `--steps 1`) / 400 (median of 3 pairs), milliseconds. About 4 minutes on 2 vCPUs.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 OLD_MOEX_CLI NEW_MOEX_CLI" >&2
  exit 2
fi
old="$(realpath "$1")"
new="$(realpath "$2")"
cd "$(dirname "$0")/../.."
wall() {  # milliseconds of one run of "$@"
  local t0 t1
  t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {print (b - a) * 1000}'
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
perstep() {  # ms per step of build $1 on sample $2
  local one many
  one=$(wall "$1" simulate "$2" --steps 1)
  many=$(wall "$1" simulate "$2" --steps 401)
  awk -v a="$one" -v b="$many" 'BEGIN {printf "%.3f\n", (b - a) / 400}'
}
printf "%-40s %9s %9s %9s %9s\n" sample cold_old cold_new step_old step_new
for f in samples/scenarios/*.yaml; do
  co=(); cn=(); so=(); sn=()
  for _ in 1 2 3 4 5; do
    co+=("$(wall "$old" simulate "$f" --steps 10)")
    cn+=("$(wall "$new" simulate "$f" --steps 10)")
  done
  for _ in 1 2 3; do
    so+=("$(perstep "$old" "$f")")
    sn+=("$(perstep "$new" "$f")")
  done
  printf "%-40s %9.1f %9.1f %9.3f %9.3f\n" "$(basename "$f" .yaml)" \
    "$(printf '%s\n' "${co[@]}" | median)" "$(printf '%s\n' "${cn[@]}" | median)" \
    "$(printf '%s\n' "${so[@]}" | median)" "$(printf '%s\n' "${sn[@]}" | median)"
done
