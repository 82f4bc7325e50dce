#!/usr/bin/env bash
# Runs every test: Rust (release, whole workspace) and Python.
# Installs what it needs into .venv first, so it works on a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -e ".[test]"

# The report test opens the HTML report in headless Chromium (Debian's
# package); install it when missing and we may (root), else that test skips.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "could not install chromium: the report rendering test will be skipped" >&2
fi

# The pcap readability test dissects the simulator's captures with tshark
# (Debian's package); install it when missing and we may (root), answering
# wireshark-common's question (may non-root users capture?) with no, else
# that test skips.
if ! command -v tshark >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections \
    && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark >/dev/null) \
    || echo "could not install tshark: the pcap readability test will be skipped" >&2
fi

cargo test --profile test-release --workspace
python -m pytest -q tests/python
