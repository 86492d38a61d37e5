#!/usr/bin/env bash
# The CUDA backend's checks on a GPU, in two halves (docs/benchmarks-gpu.md):
#
#   bash scripts/gpu.sh build         here, with the Rust toolchain: packs the
#                                     release test binaries and the GPU benchmark
#                                     into .gpu/suite.tar.xz (ignored by git)
#   bash scripts/gpu.sh suite         on the device machine (a driver and NVRTC,
#                                     no Rust): the property suite on the GPU
#   bash scripts/gpu.sh bench [SIZE]  on the device machine: the GPU benchmarks
#
# On the device, `.gpu` travels as a carried path (the device tool's `carry`);
# logs go to $OUT (or ./gpu-out when OUT is unset).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
out="${OUT:-$root/gpu-out}"

case "${1:-}" in
build)
    export CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols
    rm -rf .gpu && mkdir -p .gpu/pack/tests
    # every test binary of the library, by the path cargo reports
    cargo test --release -p accelerate --features cuda --tests --no-run --message-format=json |
        python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        shutil.copy(m["executable"], ".gpu/pack/tests/" + m["target"]["name"])
'
    cargo build --release -p accelerate-bench --features cuda --bin gpu
    cp target/release/gpu .gpu/pack/gpu
    # the tests find their data under the checkout they were built in
    echo "$root" > .gpu/pack/root
    tar -cJf .gpu/suite.tar.xz -C .gpu/pack .
    rm -rf .gpu/pack
    du -h .gpu/suite.tar.xz
    ;;
suite | bench)
    mkdir -p /tmp/gpu "$out"
    tar -xJf .gpu/suite.tar.xz -C /tmp/gpu
    built="$(cat /tmp/gpu/root)"
    if [ "$built" != "$root" ] && [ ! -e "$built" ]; then
        mkdir -p "$(dirname "$built")" && ln -s "$root" "$built"
    fi
    export ACCELERATE_CACHE_DIR=/tmp/accelerate-cache
    nvidia-smi > "$out/device.txt" 2>&1 || true
    if [ "$1" = suite ]; then
        # every property test on the CUDA backend against its references
        # (the CPU backend's comparisons in backend_cpu run on it too)
        export ACCELERATE_BACKEND=cuda
        log="$out/suite.log"
        : > "$log"
        failed=()
        for t in /tmp/gpu/tests/*; do
            echo "== $(basename "$t")" >> "$log"
            if ! (cd crates/accelerate && "$t" --test-threads=8) >> "$log" 2>&1; then
                failed+=("$(basename "$t")")
            fi
            tail -n 3 "$log" | grep '^test result' || true
        done
        echo "failed: ${failed[*]:-none}" | tee -a "$log"
        [ "${#failed[@]}" -eq 0 ]
    else
        /tmp/gpu/gpu --size "${2:-large}" 2>&1 | tee "$out/bench.md"
    fi
    ;;
*)
    sed -n '2,12p' "$0"
    exit 2
    ;;
esac
