"""The mean and variance of a float32 vector from its sum and the sum of
its squares (`src/programs/moments.rs`): ``mean = s / n`` and
``variance = s2 / n - mean * mean``, all in float32. The result is the
two as an array of two float32s.

Every variant reads the vector without writing a temporary of it: NumPy
takes the sum of squares as a dot product of the vector with itself
(``xs * xs`` would allocate and write a vector as large as the input),
and so reads the vector twice, once per sum.
SciPy has no variant: its statistics (`scipy.stats.describe`, `moment`)
compute the variance from the deviations from the mean: another
formula, in two passes over the vector."""

import numpy as np


def finish(s, s2, n):
    """Mean and variance from the two sums, in float32."""
    n = np.float32(n)
    mean = np.float32(s) / n
    return np.array([mean, np.float32(s2) / n - mean * mean], dtype=np.float32)


def moments_numpy(xs):
    return finish(xs.sum(), np.dot(xs, xs), xs.shape[0])


def moments_numba():
    """One pass, the two sums as `prange` reductions (each thread's share
    of the vector into its own pair of sums, added at the end). Splitting
    each thread's sums into independent running sums, as the Rust
    versions do, gained nothing here: without `fastmath` LLVM keeps the
    adds scalar either way."""
    from numba import njit, prange

    @njit(parallel=True)
    def sums(xs):
        s = np.float32(0.0)
        s2 = np.float32(0.0)
        for i in prange(xs.shape[0]):
            x = xs[i]
            s += x
            s2 += x * x
        return s, s2

    def moments(xs):
        s, s2 = sums(xs)
        return finish(s, s2, xs.shape[0])

    return moments


def moments_jax():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def moments(xs):
        n = jnp.float32(xs.shape[0])
        mean = jnp.sum(xs) / n
        return jnp.stack([mean, jnp.sum(xs * xs) / n - mean * mean])

    return moments


def setup(variant, folder, args):
    """A function of no arguments computing ``[mean, variance]``."""
    n = int(args[0])
    xs = np.fromfile(f"{folder}/xs.bin", dtype="<f4", count=n)
    if variant == "numpy":
        return lambda: moments_numpy(xs)
    if variant == "numba":
        moments = moments_numba()
        return lambda: moments(xs)
    if variant == "jax":
        import jax

        moments = moments_jax()
        dx = jax.device_put(xs)
        return lambda: moments(dx).block_until_ready()
    raise ValueError(f"no variant {variant} of moments")
