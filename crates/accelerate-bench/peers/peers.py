"""The Python peers of the benchmark harness: the same problems computed
with the tools a user would otherwise pick (NumPy, Numba with
``parallel=True``, with and without ``fastmath=True``, and JAX with
``jit``), on the same data, for ``accelerate-bench`` to time and check
beside its own variants (``src/peers.rs``).

One process serves one variant. It reads commands on standard input, one
per line, and answers each with one line:

    setup BENCH VARIANT DIR ARGS...   ->  ok | skip REASON
    run                               ->  done SECONDS

``setup`` loads the inputs the harness wrote into DIR (raw little-endian
arrays), prepares the variant (compiling it and running it once, so that
no compilation is timed) and answers ``skip`` with the reason when the
variant's library is not installed. ``run`` computes the result once,
timing only the computation (``time.perf_counter`` around the call, with
JAX's ``block_until_ready``), then writes the result into DIR as
``out-VARIANT.bin`` for the harness to check: its array, or each array
of a tuple in turn, as raw little-endian values of the array's own type
(the benchmark's Rust side reads them back in that order and type).

Benchmark BENCH is served by the module ``bench_BENCH`` beside this
script, whose ``setup(variant, folder, args)`` returns a function of no
arguments that computes the result (and raises ``ValueError`` for a
variant it does not have).
"""

import importlib
import sys
import time

import numpy as np


def write_result(result, path):
    """The result's arrays, one after the other, little-endian."""
    parts = result if isinstance(result, tuple) else (result,)
    with open(path, "wb") as out:
        for part in parts:
            a = np.asarray(part)
            a.astype(a.dtype.newbyteorder("<"), copy=False).reshape(-1).tofile(out)


def main():
    run = None
    out_path = None
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "setup":
            bench, variant, folder, args = words[1], words[2], words[3], words[4:]
            try:
                run = importlib.import_module(f"bench_{bench}").setup(variant, folder, args)
                run()  # compile and warm up, untimed
            except ImportError as e:
                print(f"skip {e}", flush=True)
                continue
            out_path = f"{folder}/out-{variant}.bin"
            print("ok", flush=True)
        elif words[0] == "run":
            start = time.perf_counter()
            result = run()
            seconds = time.perf_counter() - start
            write_result(result, out_path)
            print(f"done {seconds!r}", flush=True)
        else:
            print(f"skip unknown command {words[0]}", flush=True)


if __name__ == "__main__":
    main()
