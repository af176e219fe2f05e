#!/usr/bin/env bash
# Simulator speed of two commits, measured in one process with their steps alternated
# (sim_ab_main.cpp says why). Not part of the build or CI: a tool for performance work.
#   tests/bench/sim_ab/sim_ab.sh COMMIT_A COMMIT_B [SCENARIO] [WARM_STEPS] [ROUTED_STEPS]
# Builds core/ of each commit with -O3 (like the Release preset; several minutes on 2 cores).
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,5p' "$0"; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
scenario=${3:-$repo/samples/scenarios/deepseek-r1-decode-nvl72.yaml}
work=$(mktemp -d)
trap 'git -C "$repo" worktree remove --force "$work/A" 2>/dev/null || true; git -C "$repo" worktree remove --force "$work/B" 2>/dev/null || true; rm -rf "$work"' EXIT
flags=(-O3 -DNDEBUG -std=c++20)
for side in A B; do
  commit=$([ $side = A ] && echo "$1" || echo "$2")
  git -C "$repo" worktree add --quiet --detach "$work/$side" "$commit"
  mkdir -p "$work/obj$side"
  # Every source of core/ except CUDA, in this tree's own namespace (moexA / moexB).
  find "$work/$side/core" -name '*.cpp' -not -path '*/cuda/*' | sort > "$work/src$side"
  xargs -P "$(nproc)" -I{} sh -c 'g++ "$@" -c "{}" -o "'"$work/obj$side"'/$(echo "{}" | md5sum | cut -c1-12).o"' _ \
    "${flags[@]}" -I"$work/$side/core" -Dmoex=moex$side < "$work/src$side"
  g++ "${flags[@]}" -I"$work/$side/core" -Dmoex=moex$side "-DSIM_AB_ENTRY(n)=${side}_##n" -c "$here/sim_entry.cpp" -o "$work/obj$side/entry.o"
  ar rcs "$work/lib$side.a" "$work/obj$side"/*.o
done
g++ -O2 -std=c++20 "$here/sim_ab_main.cpp" "$work/libA.a" "$work/libB.a" -lyaml-cpp -lpthread -o "$work/sim_ab"
echo "A = $(git -C "$repo" rev-parse --short "$1"), B = $(git -C "$repo" rev-parse --short "$2"), $(basename "$scenario")"
"$work/sim_ab" "$scenario" "${4:-300}" "${5:-20}"
