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

cargo test --release --workspace
python -m pytest -q tests/python
