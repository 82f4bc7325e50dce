#!/usr/bin/env bash
# The drive-by in ns-3 and in wayside, side by side (see README.md here).
# Usage: benches/ns3/run.sh [bench.py options, e.g. --case one]
# Makes benches/ns3/.venv with ns-3 (the `ns3` wheel) and wayside (release),
# compiles driveby.cc against the wheel's headers and libraries into
# benches/ns3/build/, and runs bench.py.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
py="$venv/bin/python"
[ -x "$py" ] || python3 -m venv "$venv"
"$py" -m pip install -q --disable-pip-version-check "ns3==3.44.post0" "maturin>=1.5,<2"
# wayside, rebuilt when its sources are newer than the installed extension.
so="$(ls "$root"/python/wayside/_native*.so 2>/dev/null | head -n1 || true)"
if [ -z "$so" ] || ! "$py" -c "import wayside" 2>/dev/null \
  || [ -n "$(find "$root/crates" "$root/Cargo.lock" -newer "$so" \( -name '*.rs' -o -name '*.toml' -o -name Cargo.lock \) -print -quit)" ]; then
  (cd "$root" && VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" maturin develop --release -q)
fi
ns3="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')/ns3"
mkdir -p "$here/build"
bin="$here/build/driveby"
if [ ! -x "$bin" ] || [ "$here/driveby.cc" -nt "$bin" ]; then
  libs=""
  for m in core network internet wifi mobility applications point-to-point propagation traffic-control; do
    libs="$libs -lns3.44-$m"
  done
  # The wheel's libraries are a release build with logging and asserts in.
  g++ -O2 -std=c++20 -DNS3_BUILD_PROFILE_RELEASE -DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE \
    -I"$ns3/include" "$here/driveby.cc" -o "$bin" \
    -L"$ns3/lib64" -Wl,-rpath,"$ns3/lib64" $libs
fi
exec nice -n 10 "$py" "$here/bench.py" --ns3 "$bin" "$@"
