"""saxpy, ``a * x + y`` over float32 vectors (`src/programs/saxpy.rs`),
into a new vector: the inputs stay as they are from run to run.

NumPy, Numba and SciPy write into an output made once in `setup`, as the
Rust versions do (NumPy's ``a * x + y`` would allocate a temporary for
``a * x`` and another for the sum on every run); JAX returns a new array,
as its arrays are immutable. SciPy's is BLAS's ``saxpy``, which updates
``y`` in place: the output is a copy of ``y`` updated, so that the input
does not change."""

import numpy as np


def saxpy_numpy(a, xs, ys, out):
    np.multiply(xs, a, out=out)
    np.add(out, ys, out=out)
    return out


def saxpy_numba():
    from numba import njit, prange

    @njit(parallel=True)
    def saxpy(a, xs, ys, out):
        for i in prange(xs.shape[0]):
            out[i] = a * xs[i] + ys[i]

    return saxpy


def setup(variant, folder, args):
    """A function of no arguments computing ``a * x + y``."""
    n, a = int(args[0]), np.float32(args[1])
    xs = np.fromfile(f"{folder}/xs.bin", dtype="<f4", count=n)
    ys = np.fromfile(f"{folder}/ys.bin", dtype="<f4", count=n)
    if variant == "numpy":
        out = np.empty(n, dtype=np.float32)
        return lambda: saxpy_numpy(a, xs, ys, out)
    if variant == "numba":
        saxpy = saxpy_numba()
        out = np.empty(n, dtype=np.float32)

        def run():
            saxpy(a, xs, ys, out)
            return out

        return run
    if variant == "jax":
        import jax

        saxpy = jax.jit(lambda x, y: a * x + y)
        dx, dy = jax.device_put(xs), jax.device_put(ys)
        return lambda: saxpy(dx, dy).block_until_ready()
    if variant == "scipy":
        from scipy.linalg.blas import saxpy

        out = np.empty(n, dtype=np.float32)

        def run():
            np.copyto(out, ys)
            # `out` is float32 and contiguous, so BLAS updates it in place
            return saxpy(xs, out, a=a)

        return run
    raise ValueError(f"no variant {variant} of saxpy")
