#!/usr/bin/env bash
# Issue 15's predicted-vs-measured protocol (docs/PERFORMANCE.md, "CPU engine: predicted vs
# measured"): for each shape, calibrate this CPU, run the engine long enough to span the VM's
# bandwidth swings, calibrate again, and let `compare --measured` predict the run on host-cpu with
# both calibrations (it compares against each layer's median over the steps). Prints one row per
# shape: measured and predicted MoE-layer ms, the signed error, and the two calibrations' own
# predictions (how far apart the machine's two moments were).
#
#   tests/bench/predicted_vs_measured.sh MOEX_CLI [OUTDIR] [STEPS_SCALE] [SHAPE...]
#
# STEPS_SCALE (default 1) multiplies each shape's step count (0.1 for a quick look). The runs and
# calibrations are kept in OUTDIR (default: a new temporary directory). SHAPEs (names from the
# table below) run only those shapes.
set -euo pipefail
usage="usage: predicted_vs_measured.sh MOEX_CLI [OUTDIR] [STEPS_SCALE] [SHAPE...]"
cli=${1:?$usage}
[[ -x $cli ]] || { echo "predicted_vs_measured.sh: $cli is not an executable moex-cli" >&2; exit 2; }
out=${2:-$(mktemp -d)}
scale=${3:-1}
[[ $scale =~ ^[0-9]*\.?[0-9]+$ ]] && python3 -c "import sys; sys.exit(not float('$scale') > 0)" ||
  { echo "predicted_vs_measured.sh: STEPS_SCALE '$scale' is not a number above 0" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"

# name | sample | ranks | tokens | layer | steps (none of them a calibration shape: 2048 x 1024, 6144 x 2048, 8192 x 4096)
shapes=(
  "mixtral-r2|mixtral-8x7b-decode-hgx-h100|2|32|0|200"
  "mixtral-r4|mixtral-8x7b-decode-hgx-h100|4|32|0|150"
  "gpt-oss-r2|gpt-oss-120b-decode-hgx-h200|2|64|0|60"
  "deepseek-r1-r2|deepseek-r1-decode-nvl72|2|64|3|200"
)

only=("${@:4}")
for want in "${only[@]}"; do
  printf '%s\n' "${shapes[@]}" | grep -q "^$want|" ||
    { echo "predicted_vs_measured.sh: no shape '$want' (the shapes: mixtral-r2 mixtral-r4 gpt-oss-r2 deepseek-r1-r2)" >&2; exit 2; }
done

printf '%-16s %5s %6s %6s %12s %12s %8s %22s\n' shape ranks tokens steps "measured ms" "predicted ms" error "before / after ms"
for row in "${shapes[@]}"; do
  IFS='|' read -r name sample ranks tokens layer steps <<<"$row"
  if ((${#only[@]})) && ! printf '%s\n' "${only[@]}" | grep -qx "$name"; then continue; fi
  steps=$(python3 -c "print(max(3, round($steps * $scale)))")
  d="$out/$name"
  mkdir -p "$d"
  "$cli" calibrate --backend cpu -o "$d/before.yaml" >"$d/calibrate-before.log" 2>&1
  "$cli" run "$here/samples/scenarios/$sample.yaml" --ranks "$ranks" --tokens "$tokens" --layers "$layer" \
    --steps "$steps" --set engine.routing=workload --json "$d/run.json" >"$d/run.log" 2>&1
  "$cli" calibrate --backend cpu -o "$d/after.yaml" >"$d/calibrate-after.log" 2>&1
  "$cli" compare --measured "$d/run.json" --calibration "$d/before.yaml" --calibration "$d/after.yaml" \
    --json "$d/compare.json" >"$d/compare.log" 2>&1
  # The two calibrations alone, to show how far apart the machine's two moments were.
  "$cli" compare --measured "$d/run.json" --calibration "$d/before.yaml" --json "$d/compare-before.json" >/dev/null 2>&1
  "$cli" compare --measured "$d/run.json" --calibration "$d/after.yaml" --json "$d/compare-after.json" >/dev/null 2>&1
  python3 - "$d" "$name" "$ranks" "$tokens" "$steps" <<'EOF'
import json, sys
d, name, ranks, tokens, steps = sys.argv[1:]
def layer(f):
    rows = {r["what"]: r for r in json.load(open(f"{d}/{f}"))["rows"]}
    return rows["MoE layers"]
both, before, after = layer("compare.json"), layer("compare-before.json"), layer("compare-after.json")
print(f"{name:<16} {ranks:>5} {tokens:>6} {steps:>6} {both['measured_us'] / 1e3:12.1f} {both['predicted_us'] / 1e3:12.1f} "
      f"{100 * both['error']:+7.1f}% {before['predicted_us'] / 1e3:10.1f} / {after['predicted_us'] / 1e3:.1f}")
EOF
done
echo "kept in $out"
