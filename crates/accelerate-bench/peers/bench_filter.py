"""Stream compaction (`src/programs/filter.rs`): the float32 values
greater than a threshold, in order."""

import numpy as np


def filter_numba():
    """Two passes over one chunk per thread, as a Numba user parallelises
    a compaction: count each chunk's kept values, place the chunks by a
    scan of the counts, copy each chunk's kept values to its place."""
    import numba
    from numba import njit, prange

    @njit(parallel=True)
    def compact(xs, t, chunks):
        n = xs.shape[0]
        size = (n + chunks - 1) // chunks
        counts = np.zeros(chunks, dtype=np.int64)
        for c in prange(chunks):
            k = 0
            for i in range(c * size, min(n, (c + 1) * size)):
                if xs[i] > t:
                    k += 1
            counts[c] = k
        starts = np.zeros(chunks + 1, dtype=np.int64)
        starts[1:] = np.cumsum(counts)
        out = np.empty(starts[chunks], dtype=xs.dtype)
        for c in prange(chunks):
            k = starts[c]
            for i in range(c * size, min(n, (c + 1) * size)):
                if xs[i] > t:
                    out[k] = xs[i]
                    k += 1
        return out

    chunks = numba.get_num_threads()
    return lambda xs, t: compact(xs, t, chunks)


def setup(variant, folder, args):
    """A function of no arguments computing the kept values."""
    n, t = int(args[0]), np.float32(args[1])
    xs = np.fromfile(f"{folder}/xs.bin", dtype="<f4", count=n)
    if variant == "numpy":
        return lambda: xs[xs > t]
    if variant == "numba":
        compact = filter_numba()
        return lambda: compact(xs, t)
    if variant == "jax":
        import jax
        import jax.numpy as jnp

        # jit needs a static result size: the kept values at the front of
        # an array of n, and their count, sliced on the host. Each kept
        # value is scattered to its place, the running count of kept
        # values: 0.8 s at 2^24 against 5.4 s for `jnp.compress(keep, xs,
        # size=n)` and 1.4 s for a gather at `jnp.nonzero(keep, size=n)`
        # (measured on the two-core machine of docs/benchmarks.md).
        @jax.jit
        def compact(xs):
            keep = xs > t
            places = jnp.where(keep, jnp.cumsum(keep) - 1, n)
            kept = jnp.zeros(n, xs.dtype).at[places].set(xs, mode="drop", unique_indices=True)
            return kept, jnp.sum(keep)

        dx = jax.device_put(xs)

        def run():
            kept, count = jax.block_until_ready(compact(dx))
            return np.asarray(kept)[: int(count)]

        return run
    raise ValueError(f"no variant {variant} of filter")
