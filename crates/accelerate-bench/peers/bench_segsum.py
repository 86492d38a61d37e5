"""Segmented sums (`src/programs/segsum.rs`): float64 values cut into
consecutive segments given by their lengths (int64), and the sum of
each (float64), an empty segment summing to 0. Every variant starts from
the lengths, as the Rust ones do."""

import numpy as np


def segsum_numpy(xs, lengths):
    """`np.add.reduceat` at the starts of the non-empty segments: each
    such segment's sum runs to the next non-empty one's start, which is
    its own end (`reduceat` would give an empty segment the element at its
    start, and a start at the very end is out of its range). The empty
    segments are 0."""
    starts = np.zeros(lengths.shape[0], dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    nonempty = lengths > 0
    sums = np.zeros(lengths.shape[0], dtype=np.float64)
    if nonempty.any():
        sums[nonempty] = np.add.reduceat(xs, starts[nonempty])
    return sums


def segsum_numba():
    """The offsets by a cumulative sum, then one segment per parallel
    iteration."""
    from numba import njit, prange

    @njit(parallel=True)
    def segsum(xs, lengths):
        nseg = lengths.shape[0]
        offsets = np.zeros(nseg + 1, dtype=np.int64)
        offsets[1:] = np.cumsum(lengths)
        out = np.empty(nseg, dtype=np.float64)
        for s in prange(nseg):
            acc = 0.0
            for i in range(offsets[s], offsets[s + 1]):
                acc += xs[i]
            out[s] = acc
        return out

    return segsum


def segsum_jax(n, nseg):
    """`jax.ops.segment_sum` over every element's segment number (the
    segment numbers repeated by the lengths)."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def segsum(xs, lengths):
        ids = jnp.repeat(jnp.arange(nseg), lengths, total_repeat_length=n)
        return jax.ops.segment_sum(xs, ids, num_segments=nseg, indices_are_sorted=True)

    return segsum


def segsum_scipy(xs, lengths):
    """`scipy.ndimage.sum_labels`: the sums of the elements of each label,
    the labels being the segment numbers."""
    from scipy import ndimage

    nseg = lengths.shape[0]
    labels = np.repeat(np.arange(nseg), lengths)
    return np.asarray(ndimage.sum_labels(xs, labels, index=np.arange(nseg)), dtype=np.float64)


def setup(variant, folder, args):
    """A function of no arguments computing the segment sums."""
    n, nseg = int(args[0]), int(args[1])
    xs = np.fromfile(f"{folder}/xs.bin", dtype="<f8", count=n)
    lengths = np.fromfile(f"{folder}/lengths.bin", dtype="<i8", count=nseg)
    if variant == "numpy":
        return lambda: segsum_numpy(xs, lengths)
    if variant == "numba":
        segsum = segsum_numba()
        return lambda: segsum(xs, lengths)
    if variant == "jax":
        import jax

        # float64 and int64 arrays (JAX makes every array 32-bit without it)
        jax.config.update("jax_enable_x64", True)
        segsum = segsum_jax(n, nseg)
        dx, dl = jax.device_put(xs), jax.device_put(lengths)
        return lambda: segsum(dx, dl).block_until_ready()
    if variant == "scipy":
        return lambda: segsum_scipy(xs, lengths)
    raise ValueError(f"no variant {variant} of segsum")
