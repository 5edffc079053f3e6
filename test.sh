#!/usr/bin/env bash
# test.sh: installs what the tests need (apt-get when root), builds, and runs every test:
# unit tests, the command line, and the kernel end to end on the first OpenCL device
# (PoCL on a machine without a GPU). The last line counts tests: "N passed, N failed,
# N skipped", under the list of skipped tests and their reasons.
set -eu
cd "$(dirname "$0")"
bash tools/ensure-deps.sh test
make -j"$(nproc 2>/dev/null || echo 2)" all
make test
