#!/usr/bin/env bash
# Fuzzes every parser of untrusted bytes in Broadside (fuzz/broadside, target
# `parse`) for a bounded time. Usage: scripts/fuzz.sh [SECONDS]  (default 60,
# or $FUZZ_SECONDS). Exit code: 0 when the run finds nothing or cannot run
# here (no nightly toolchain: says so), non-zero when libFuzzer finds a
# crash; the crashing input is kept under fuzz/broadside/artifacts/.
#
# Needs `cargo +nightly`; installs cargo-fuzz (`cargo install cargo-fuzz
# --locked`) when it is missing. Builds into $FUZZ_TARGET_DIR (default
# target/fuzz); the corpus grows in $FUZZ_TARGET_DIR/corpus/parse, so repeated
# runs on one machine start from what earlier runs found.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
secs="${1:-${FUZZ_SECONDS:-60}}"
case "$secs" in
  ''|*[!0-9]*) echo "fuzz: SECONDS must be a whole number, got '$secs'" >&2; exit 2 ;;
esac

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz: skipped: no nightly Rust toolchain here (cargo-fuzz needs one: rustup toolchain install nightly)"
  exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz"
  if ! cargo install cargo-fuzz --locked; then
    echo "fuzz: skipped: cargo-fuzz could not be installed"
    exit 0
  fi
fi

target_dir="${FUZZ_TARGET_DIR:-$root/target/fuzz}"
corpus="$target_dir/corpus/parse"
artifacts="$root/fuzz/broadside/artifacts/parse"
mkdir -p "$corpus" "$artifacts"
echo "fuzz: target parse for ${secs} s (corpus $corpus)"
# -rss_limit_mb: a parser that allocates by an untrusted length fails the run.
cargo +nightly fuzz run parse --fuzz-dir "$root/fuzz/broadside" --release --target-dir "$target_dir" "$corpus" -- \
  -max_total_time="$secs" -rss_limit_mb=1024 -artifact_prefix="$artifacts/" -print_final_stats=1
echo "fuzz: no crash in ${secs} s"
