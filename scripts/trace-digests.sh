#!/usr/bin/env bash
# Prints the SHA-256 digest of every trace column for a fixed set of 18
# runs: each built-in scenario on its own seed, and two of them on a second
# seed. A change that is meant to move nothing (a refactor, a speed-up)
# must leave this output byte-identical:
#
#   bash scripts/trace-digests.sh > before.txt   # on the base commit
#   bash scripts/trace-digests.sh > after.txt    # with the change
#   diff before.txt after.txt
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --profile test-release -p wayside-sim --example run
exe="${CARGO_TARGET_DIR:-target}/test-release/examples/run"
runs=(
  "saturation" "range" "drive-by" "static-lab" "hadaller-highway"
  "hadaller-highway-remote" "hadaller-two-cars" "drivethru-autobahn"
  "drivethru-lab" "chen-vanet" "mukherjee-static" "mukherjee-slow-drive"
  "mukherjee-pedestrian" "zahn-terraced" "zahn-residential" "zahn-motorway"
  "drive-by --seed 2" "hadaller-highway --seed 2"
)
for run in "${runs[@]}"; do
  # shellcheck disable=SC2086
  printf '%-28s %s\n' "$run" "$("$exe" $run)"
done
