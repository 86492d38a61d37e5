"""A histogram with per-bin extremes (`src/programs/histogram.rs`): the
values in [0, 1) counted into equal bins, with each bin's smallest and
largest value; values outside [0, 1) are dropped. The bin of `x` is
`int(x * bins)` computed in f32, clamped to `bins - 1`, as on the Rust
side. The result is the counts (int64), then the minima and the maxima
(float32), an empty bin's range being (+inf, -inf)."""

import numpy as np


def bins_of(xs, bins):
    """The values in range and their bins (the multiply in f32)."""
    x = xs[(xs >= 0) & (xs < 1)]
    b = np.minimum((x * np.float32(bins)).astype(np.int64), bins - 1)
    return x, b


def histogram_numpy(xs, bins):
    x, b = bins_of(xs, bins)
    counts = np.bincount(b, minlength=bins).astype(np.int64)
    lo = np.full(bins, np.inf, dtype=np.float32)
    hi = np.full(bins, -np.inf, dtype=np.float32)
    np.minimum.at(lo, b, x)
    np.maximum.at(hi, b, x)
    return counts, lo, hi


def histogram_numba():
    """One chunk of the values per thread into private bins, merged at
    the end (the parallel histogram a Numba user writes: `prange` over
    chunks, since concurrent updates of shared bins would race)."""
    import numba
    from numba import njit, prange

    @njit(parallel=True)
    def hist(xs, bins, chunks):
        n = xs.shape[0]
        fb = np.float32(bins)
        counts = np.zeros((chunks, bins), dtype=np.int64)
        lo = np.full((chunks, bins), np.inf, dtype=np.float32)
        hi = np.full((chunks, bins), -np.inf, dtype=np.float32)
        size = (n + chunks - 1) // chunks
        for c in prange(chunks):
            for i in range(c * size, min(n, (c + 1) * size)):
                x = xs[i]
                if x >= 0 and x < 1:
                    b = min(np.int64(x * fb), bins - 1)
                    counts[c, b] += 1
                    lo[c, b] = min(lo[c, b], x)
                    hi[c, b] = max(hi[c, b], x)
        out_counts = np.zeros(bins, dtype=np.int64)
        out_lo = np.full(bins, np.inf, dtype=np.float32)
        out_hi = np.full(bins, -np.inf, dtype=np.float32)
        for b in prange(bins):
            for c in range(chunks):
                out_counts[b] += counts[c, b]
                out_lo[b] = min(out_lo[b], lo[c, b])
                out_hi[b] = max(out_hi[b], hi[c, b])
        return out_counts, out_lo, out_hi

    chunks = numba.get_num_threads()
    return lambda xs, bins: hist(xs, bins, chunks)


def histogram_jax(bins):
    import jax
    import jax.numpy as jnp

    @jax.jit
    def hist(xs):
        keep = (xs >= 0) & (xs < 1)
        b = jnp.minimum((xs * np.float32(bins)).astype(jnp.int32), bins - 1)
        b = jnp.where(keep, b, bins)  # out of range: dropped by mode="drop"
        counts = jnp.zeros(bins, jnp.int32).at[b].add(1, mode="drop")
        lo = jnp.full(bins, jnp.inf, jnp.float32).at[b].min(xs, mode="drop")
        hi = jnp.full(bins, -jnp.inf, jnp.float32).at[b].max(xs, mode="drop")
        return counts, lo, hi

    return hist


def setup(variant, folder, args):
    """A function of no arguments computing the histogram."""
    n, bins = int(args[0]), int(args[1])
    xs = np.fromfile(f"{folder}/xs.bin", dtype="<f4", count=n)
    if variant == "numpy":
        return lambda: histogram_numpy(xs, bins)
    if variant == "numba":
        hist = histogram_numba()
        return lambda: hist(xs, bins)
    if variant == "jax":
        import jax

        hist = histogram_jax(bins)
        dx = jax.device_put(xs)

        def run():
            counts, lo, hi = jax.block_until_ready(hist(dx))
            return np.asarray(counts).astype(np.int64), np.asarray(lo), np.asarray(hi)

        return run
    raise ValueError(f"no variant {variant} of histogram")
