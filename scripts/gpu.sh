#!/usr/bin/env bash
# The CUDA backend's checks on a GPU, in two halves (docs/benchmarks-gpu.md):
#
#   bash scripts/gpu.sh build         here, with the Rust toolchain: packs the
#                                     release test binaries (GPU_TESTS: only
#                                     those named), the GPU benchmark and the
#                                     examples (GPU_EXAMPLES) into
#                                     .gpu/suite.tar.xz (ignored by git)
#   bash scripts/gpu.sh suite         on the device machine (a driver and NVRTC,
#                                     no Rust): the property suite on the GPU
#   bash scripts/gpu.sh bench [SIZE]  on the device machine: the GPU benchmarks
#   bash scripts/gpu.sh examples      on the device machine: the examples
#                                     ($GPU_EXAMPLES) with --check on the GPU
#   bash scripts/gpu.sh sequences ARGS
#                                     on the device machine: the bench crate's
#                                     `sequences` binary with ARGS on the GPU
#
# On the device, `.gpu` travels as a carried path (the device tool's `carry`);
# logs go to $OUT (or ./gpu-out when OUT is unset).
set -euo pipefail
cd "$(dirname "$0")/.."
# the examples carried and run on the CUDA backend with --check
GPU_EXAMPLES="${GPU_EXAMPLES:-dotp blackscholes mandelbrot nbody smvm pagerank seq_stream}"
root="$PWD"
out="${OUT:-$root/gpu-out}"

case "${1:-}" in
build)
    export CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols
    rm -rf .gpu && mkdir -p .gpu/pack/tests
    # every test binary of the library (or those GPU_TESTS names), by the
    # path cargo reports
    tests="--tests"
    if [ -n "${GPU_TESTS:-}" ]; then
        tests="$(printf -- '--test %s ' $GPU_TESTS)"
    fi
    # shellcheck disable=SC2086
    cargo test --release -p accelerate --features cuda $tests --no-run --message-format=json |
        python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        shutil.copy(m["executable"], ".gpu/pack/tests/" + m["target"]["name"])
'
    cargo build --release -p accelerate-bench --features cuda --bin gpu --bin sequences
    cp target/release/gpu target/release/sequences .gpu/pack/
    # the examples `examples` runs on the device, each with --check
    mkdir -p .gpu/pack/examples
    for ex in $GPU_EXAMPLES; do
        if cargo build --release -p accelerate --features cuda --example "$ex"; then
            cp "target/release/examples/$ex" .gpu/pack/examples/
        else
            echo "gpu.sh: the example $ex did not build; not packed" >&2
        fi
    done
    # the tests find their data under the checkout they were built in
    echo "$root" > .gpu/pack/root
    tar -cJf .gpu/suite.tar.xz -C .gpu/pack .
    rm -rf .gpu/pack
    du -h .gpu/suite.tar.xz
    ;;
suite | bench | examples | sequences)
    mkdir -p /tmp/gpu "$out"
    tar -xJf .gpu/suite.tar.xz -C /tmp/gpu
    built="$(cat /tmp/gpu/root)"
    if [ "$built" != "$root" ] && [ ! -e "$built" ]; then
        mkdir -p "$(dirname "$built")" && ln -s "$root" "$built"
    fi
    export ACCELERATE_CACHE_DIR=/tmp/accelerate-cache
    # insta finds the workspace with cargo, which the device lacks: the
    # snapshots are under this checkout
    export INSTA_WORKSPACE_ROOT="$root"
    # NVRTC: the device's CUDA toolkit, else a pip wheel's copy
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
        $(python3 -c 'import os, nvidia.cuda_nvrtc as m; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null); do
        if ls "$d"/libnvrtc.so* > /dev/null 2>&1; then
            export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
            break
        fi
    done
    {
        nvidia-smi
        echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
        ls "${LD_LIBRARY_PATH%%:*}"/libnvrtc* 2>/dev/null
        nvcc --version 2>/dev/null | tail -2
    } > "$out/device.txt" 2>&1 || true
    if [ "$1" = suite ]; then
        # every property test on the CUDA backend against its references
        # (the CPU backend's comparisons in backend_cpu run on it too)
        export ACCELERATE_BACKEND=cuda
        log="$out/suite.log"
        mkdir -p /tmp/gpu/logs
        # the test binaries run GPU_JOBS at a time (each its own CUDA
        # context), each killed after GPU_TEST_TIMEOUT seconds so that one
        # that hangs cannot stop the rest; one log each, joined in order
        run_one() {
            local t="$1" name start rc
            name="$(basename "$t")"
            start=$SECONDS
            (cd crates/accelerate && timeout "${GPU_TEST_TIMEOUT:-150}" "$t" --test-threads=4) \
                > "/tmp/gpu/logs/$name.log" 2>&1
            rc=$?
            echo "== $name: exit $rc after $((SECONDS - start)) s" >> "/tmp/gpu/logs/$name.log"
            tail -n 1 "/tmp/gpu/logs/$name.log"
        }
        export -f run_one
        ls /tmp/gpu/tests/* | xargs -P "${GPU_JOBS:-4}" -I{} bash -c 'run_one {}'
        : > "$log"
        failed=()
        for t in /tmp/gpu/tests/*; do
            name="$(basename "$t")"
            cat "/tmp/gpu/logs/$name.log" >> "$log"
            grep -q "^== $name: exit 0 " "/tmp/gpu/logs/$name.log" || failed+=("$name")
        done
        grep '^test result' "$log" | awk '{p+=$4; f+=$6; i+=$8} END {print "passed " p ", failed " f ", ignored " i}' |
            tee -a "$log"
        echo "failed binaries: ${failed[*]:-none}" | tee -a "$log"
        [ "${#failed[@]}" -eq 0 ]
    elif [ "$1" = examples ]; then
        # the examples on the CUDA backend, each checked against plain Rust
        export ACCELERATE_BACKEND=cuda
        status=0
        for ex in /tmp/gpu/examples/*; do
            echo "== $(basename "$ex") ${GPU_EXAMPLE_ARGS:-}"
            timeout "${GPU_TEST_TIMEOUT:-150}" "$ex" --check ${GPU_EXAMPLE_ARGS:-} || { echo "FAILED: $(basename "$ex")"; status=1; }
        done 2>&1 | tee "$out/examples.log"
        grep -q '^FAILED' "$out/examples.log" && status=1
        exit $status
    elif [ "$1" = sequences ]; then
        shift
        export ACCELERATE_BACKEND=cuda
        /tmp/gpu/sequences "$@" 2>&1 | tee "$out/sequences.md"
    else
        /tmp/gpu/gpu --size "${2:-large}" 2>&1 | tee "$out/bench.md"
    fi
    ;;
*)
    sed -n '2,16p' "$0"
    exit 2
    ;;
esac
