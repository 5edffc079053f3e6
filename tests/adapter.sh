#!/usr/bin/env bash
# Runs the PyTorch adapter's tests (tests/test_adapter.py): the protocol with python3,
# and the ragged/paged layout checks, which need PyTorch (on the CPU). FABENCH_TEST_PYTHON
# names an interpreter that has torch (.ci/run makes one); without torch those checks
# skip and say so.
set -u
cd "$(dirname "$0")/.."
py="${FABENCH_TEST_PYTHON:-python3}"
if ! command -v "$py" >/dev/null; then echo "skip - the adapter's tests: no $py"; exit 0; fi
"$py" -m unittest -v tests/test_adapter.py 2>&1
