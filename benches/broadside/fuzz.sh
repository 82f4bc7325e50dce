#!/usr/bin/env bash
# Long fuzz run of every cargo-fuzz target of fuzz/broadside (the parsers of
# untrusted bytes), for a number of inputs rather than a time: prints, per
# target, the inputs run, the seconds, inputs per second, and whether
# libFuzzer found a crash (the input is kept under fuzz/broadside/artifacts/).
#
# Usage: benches/broadside/fuzz.sh [RUNS] [TARGET...]
#   RUNS defaults to 10000000 (the goal: 10^7 inputs per parser); targets
#   default to all of `cargo fuzz list`. Run it under `nice -n 10` on a
#   shared machine. Exit code: non-zero if any target crashed.
#
# Needs `cargo +nightly` and cargo-fuzz (scripts/fuzz.sh installs it; the
# bounded run CI does stays there). The corpus is shared with scripts/fuzz.sh
# ($FUZZ_TARGET_DIR/corpus/TARGET, default target/fuzz), so a long run
# starts from what earlier runs found and leaves what it finds for them.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$(pwd)"
runs="${1:-10000000}"
case "$runs" in
  ''|*[!0-9]*) echo "fuzz bench: RUNS must be a whole number, got '$runs'" >&2; exit 2 ;;
esac
shift || true
fuzz_dir="$root/fuzz/broadside"
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz bench: needs cargo +nightly and cargo-fuzz (see scripts/fuzz.sh)" >&2
  exit 2
fi
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir "$fuzz_dir")
fi
target_dir="${FUZZ_TARGET_DIR:-$root/target/fuzz}"
failed=0
printf '%-10s %12s %9s %10s  %s\n' target inputs seconds inputs/s result
for t in "${targets[@]}"; do
  corpus="$target_dir/corpus/$t"
  artifacts="$fuzz_dir/artifacts/$t"
  log="$target_dir/fuzz-bench-$t.log"
  mkdir -p "$corpus" "$artifacts"
  cargo +nightly fuzz build "$t" --fuzz-dir "$fuzz_dir" --release --target-dir "$target_dir" >/dev/null 2>&1
  start=$(date +%s.%N)
  set +e
  cargo +nightly fuzz run "$t" --fuzz-dir "$fuzz_dir" --release --target-dir "$target_dir" "$corpus" -- \
    -runs="$runs" -rss_limit_mb=1024 -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  end=$(date +%s.%N)
  inputs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  rate=$(awk -v n="${inputs:-0}" -v s="$secs" 'BEGIN { r = 0; if (s > 0) r = n / s; printf "%.0f", r }')
  if [ "$rc" -eq 0 ]; then
    result="no crash"
  else
    result="CRASH (exit $rc, log $log)"
    failed=1
  fi
  printf '%-10s %12s %9s %10s  %s\n' "$t" "${inputs:-?}" "$secs" "$rate" "$result"
done
exit "$failed"
