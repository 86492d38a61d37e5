"""Streaming against an in-memory array (`src/programs/stream.rs`): the
sum of the squares, in int64, of every element of n int32 vectors.

The peers get the vectors as the rows of one matrix in memory, the
in-memory form (`accelerate`'s, not `accelerate-seq`'s stream): what they
time is the computation, not a stream. At the small and large sizes the
sum passes 2^63 and wraps modulo 2^64, as the Rust sums do (release
builds, wrapping integer adds); wrapping addition is associative, so
every order of the sum gives the reference's value exactly. The result is
one int64. SciPy has no operation for it beyond NumPy's, so there is no
`scipy` variant."""

import numpy as np


def stream_numpy(m):
    """`einsum` with an int64 result type: the int32 elements are cast
    a buffer at a time as they are multiplied and summed, with no int64
    copy of the matrix (`np.square(m, dtype=np.int64).sum()` makes one:
    1 GiB at the large size, and twice the time)."""
    return np.einsum("ij,ij->", m, m, dtype=np.int64)


def stream_numba():
    """Each vector's sum of squares in a parallel iteration, folded by
    `prange`'s reduction."""
    from numba import njit, prange

    @njit(parallel=True)
    def stream(m):
        total = np.int64(0)
        for i in prange(m.shape[0]):
            s = np.int64(0)
            for j in range(m.shape[1]):
                v = np.int64(m[i, j])
                s += v * v
            total += s
        return total

    return stream


def stream_jax(batch):
    """Each vector's sum of squares by `lax.map` over the vectors, `batch`
    of them at a time, and their sum. The one-line `jnp.sum(x * x)` of the
    int64 squares took about ten times as long: XLA's CPU backend makes a
    large reduction a tree of `reduce-window`s, which writes the int64
    squares of the whole matrix (1 GiB at the large size) to memory; a few
    vectors at a time, the squares stay in the cache."""
    import jax
    import jax.numpy as jnp

    def sum_squares(v):
        w = v.astype(jnp.int64)
        return jnp.sum(w * w)

    @jax.jit
    def stream(m):
        return jnp.sum(jax.lax.map(sum_squares, m, batch_size=batch))

    return stream


def setup(variant, folder, args):
    """A function of no arguments computing the sum, as one int64."""
    n, length = int(args[0]), int(args[1])
    m = np.fromfile(f"{folder}/matrix.bin", dtype="<i4", count=n * length).reshape(n, length)
    if variant == "numpy":
        return lambda: stream_numpy(m)
    if variant == "numba":
        stream = stream_numba()
        return lambda: np.int64(stream(m))
    if variant == "jax":
        import jax

        # int64 sums (JAX makes every array 32-bit without it)
        jax.config.update("jax_enable_x64", True)
        # four vectors (1 MiB of int32 at the large size) a step of the map
        stream = stream_jax(4)
        dm = jax.device_put(m)
        return lambda: stream(dm).block_until_ready()
    raise ValueError(f"no variant {variant} of stream")
