#!/usr/bin/env bash
# Broadside experiments: Figure 12 discovery overhead, loopback goodput,
# two-way full-size sync, and the 20-second contact against TCP.
# Usage: benches/broadside/run.sh [OUT_DIR]   (default: benches/broadside/results)
# Writes fig12.csv, fig12.png, goodput.csv, twoway.csv, congestion.txt and contact.csv (the
# contact needs root, `ip` and /dev/net/tun; without them it is skipped).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$here/results}"
mkdir -p "$out"
cd "$root"
py="${PYTHON:-$root/.venv/bin/python}"
[ -x "$py" ] || py=python3
# Figure 12: 20,000-file universe, 10,000 per device, 0-5,000 differing; 3 seeds per point.
cargo run --release -q -p broadside --example fig12 -- 3 > "$out/fig12.csv"
"$py" "$here/plot_fig12.py" "$out/fig12.csv" "$out/fig12.png" || echo "fig12.png not drawn (needs matplotlib)"
# Throughput: 50 files of 10 MB over loopback, Broadside (unpaced) vs plain UDP
# (2304-byte datagrams) vs TCP; then Broadside through the relay at 30% loss.
cargo run --release -q -p broadside-node --example goodput -- 50 10 0 0.3 > "$out/goodput.csv"
# Two-way sync: 50 files of 10 MB, a third newer on each side; direct at 300 and
# 100 MB/s pacing, then through the UDP relay at 30% loss (60 MB/s).
{
  echo "files,mb_each,loss,a_to_b_mb,b_to_a_mb,seconds,goodput_mb_s,dup_blocks,ack_bytes,data_bytes,send_rate_mb_s"
  for args in "0 300" "0 100" "0.3 60"; do
    set -- $args
    cargo run --release -q -p broadside-node --example twoway -- 50 10 "$1" "$2" | grep -E '^[0-9]' | sed "s/\$/,$2/"
  done
} > "$out/twoway.csv"
# Congestion control: 10 MB through the UDP relay (2 MB/s at 10% loss, 20 MB/s
# clean) with default settings against a hand-set rate, then a TCP flow sharing
# a 2 MB/s bottleneck (needs root, `ip` and /dev/net/tun).
cargo run --release -q -p broadside-node --example congestion > "$out/congestion.txt"
# One 20 s contact through the packet relay (namespaces + TUN), Broadside vs TCP, 0/10/30% loss.
cargo run --release -q -p broadside-node --example contact -- 0,0.1,0.3 "$out/contact.csv"
cat "$out/fig12.csv" "$out/goodput.csv" "$out/twoway.csv" "$out/congestion.txt"
[ -f "$out/contact.csv" ] && cat "$out/contact.csv"
