#!/usr/bin/env bash
# NVRTC without a GPU or a CUDA toolkit: a virtual environment under
# target/ with NVIDIA's NVRTC wheel from PyPI, so that the CUDA backend's
# generated kernels are compiled in CI (tests/backend_cuda_codegen.rs;
# DESIGN.md §9). Prints the line that puts the library where cudarc's
# loader finds it (it opens libnvrtc.so.12 by name):
#
#     eval "$(bash .ci/nvrtc.sh)"
#
# Idempotent: an existing environment is reused. Prints nothing, and exits
# 0, when it cannot be installed (the tests then say they are skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$PWD/target/nvrtc-venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2 || exit 0
fi
if ! "$venv/bin/python" -c 'import nvidia.cuda_nvrtc' 2>/dev/null; then
    "$venv/bin/pip" install --quiet 'nvidia-cuda-nvrtc-cu12>=12.8,<13' >&2 || exit 0
fi
lib="$("$venv/bin/python" -c 'import os, nvidia.cuda_nvrtc as m; print(os.path.join(list(m.__path__)[0], "lib"))')"
if [ ! -e "$lib/libnvrtc.so.12" ]; then
    echo "nvrtc.sh: no libnvrtc.so.12 in $lib" >&2
    exit 0
fi
echo "export LD_LIBRARY_PATH=\"$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
