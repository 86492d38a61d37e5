"""The dot product of two f32 vectors (`src/programs/dotp.rs`)."""

import numpy as np


def dotp_numba():
    from numba import njit, prange

    @njit(parallel=True)
    def dotp(xs, ys):
        s = np.float32(0.0)
        for i in prange(xs.shape[0]):
            s += xs[i] * ys[i]
        return s

    return dotp


def setup(variant, folder, args):
    """A function of no arguments computing the dot product, as an array
    of one `f32`."""
    n = int(args[0])
    xs = np.fromfile(f"{folder}/xs.bin", dtype="<f4", count=n)
    ys = np.fromfile(f"{folder}/ys.bin", dtype="<f4", count=n)
    if variant == "numpy":
        return lambda: np.dot(xs, ys)
    if variant == "numba":
        dotp = dotp_numba()
        return lambda: np.float32(dotp(xs, ys))
    if variant == "jax":
        import jax
        import jax.numpy as jnp

        dotp = jax.jit(jnp.dot)
        dx, dy = jax.device_put(xs), jax.device_put(ys)
        return lambda: dotp(dx, dy).block_until_ready()
    raise ValueError(f"no variant {variant} of dotp")
