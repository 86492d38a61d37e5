"""Prefix sums (`src/programs/scan.rs`): the offsets of int32 counts,
an exclusive scan with the total appended (n + 1 int32 results).

NumPy and Numba write into an output made once in `setup`, as the Rust
versions do: a fresh 256 MiB array a run sometimes took 0.8 s instead of
0.07 s to fault in, right after the harness had written the previous
result to a file (the kernel throttling the new pages while it writes
the old ones back)."""

import numpy as np


def scan_numpy(counts, out):
    out[0] = 0
    np.cumsum(counts, dtype=np.int32, out=out[1:])
    return out


def scan_numba():
    """Reduce-then-scan over one chunk per thread (`np.cumsum` in Numba
    is sequential): each chunk's total, a scan of the totals, then each
    chunk scanned from its carry."""
    import numba
    from numba import njit, prange

    @njit(parallel=True)
    def scan(counts, chunks, out):
        n = counts.shape[0]
        size = (n + chunks - 1) // chunks
        totals = np.zeros(chunks, dtype=np.int32)
        for c in prange(chunks):
            t = np.int32(0)
            for i in range(c * size, min(n, (c + 1) * size)):
                t += counts[i]
            totals[c] = t
        out[0] = 0
        for c in prange(chunks):
            acc = np.int32(0)
            for d in range(c):
                acc += totals[d]
            for i in range(c * size, min(n, (c + 1) * size)):
                acc += counts[i]
                out[i + 1] = acc
        return out

    chunks = numba.get_num_threads()
    return lambda counts, out: scan(counts, chunks, out)


def setup(variant, folder, args):
    """A function of no arguments computing the offsets."""
    n = int(args[0])
    counts = np.fromfile(f"{folder}/counts.bin", dtype="<i4", count=n)
    if variant == "numpy":
        out = np.empty(n + 1, dtype=np.int32)
        return lambda: scan_numpy(counts, out)
    if variant == "numba":
        scan = scan_numba()
        out = np.empty(n + 1, dtype=np.int32)
        return lambda: scan(counts, out)
    if variant == "jax":
        import jax
        import jax.numpy as jnp

        @jax.jit
        def scan(counts):
            return jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(counts, dtype=jnp.int32)])

        dc = jax.device_put(counts)
        return lambda: scan(dc).block_until_ready()
    raise ValueError(f"no variant {variant} of scan")
