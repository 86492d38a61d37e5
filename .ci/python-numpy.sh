#!/usr/bin/env bash
# Python with NumPy for the exported library's Python test
# (crates/accelerate-export-demo/tests/python.rs): a virtual environment
# under target/ with NumPy from PyPI. Prints the line that tells the test
# where it is:
#
#     eval "$(bash .ci/python-numpy.sh)"
#
# Idempotent: an existing environment is reused. Prints nothing, and exits
# 0, when it cannot be installed (the test then says it is skipped, or
# fails where ACCELERATE_REQUIRE_PYTHON=1 says it must run, as in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$PWD/target/ffi-venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2 || exit 0
fi
if ! "$venv/bin/python" -c 'import numpy' 2>/dev/null; then
    "$venv/bin/pip" install --quiet 'numpy>=1.24' >&2 || exit 0
fi
echo "export ACCELERATE_PYTHON=\"$venv/bin/python\""
