#!/usr/bin/env bash
# Runs the PyTorch adapter's protocol tests (tests/test_adapter.py) with python3.
set -u
cd "$(dirname "$0")/.."
if ! command -v python3 >/dev/null; then echo "skip: no python3"; exit 0; fi
python3 -m unittest -v tests/test_adapter.py 2>&1
