"""Dense matrix times vector, float32 (`src/programs/matvec.rs`): an
n x n matrix, row by row, times a vector of n; the result is the n dot
products of the rows with the vector (float32)."""

import numpy as np


def matvec_numba():
    """One row per parallel iteration, its dot product with the vector in
    eight independent running sums (without `fastmath` LLVM keeps a single
    sum's adds in order, a chain of dependent adds; the eight chains
    overlap, which halved the time here, though the adds stay scalar)."""
    from numba import njit, prange

    lanes = 8

    @njit(parallel=True)
    def matvec(m, v):
        rows, cols = m.shape
        body = cols - cols % lanes
        out = np.empty(rows, dtype=np.float32)
        for i in prange(rows):
            acc = np.zeros(lanes, dtype=np.float32)
            for j in range(0, body, lanes):
                for k in range(lanes):
                    acc[k] += m[i, j + k] * v[j + k]
            s = np.float32(0.0)
            for j in range(body, cols):
                s += m[i, j] * v[j]
            out[i] = acc.sum() + s
        return out

    return matvec


def setup(variant, folder, args):
    """A function of no arguments computing the product."""
    n = int(args[0])
    m = np.fromfile(f"{folder}/m.bin", dtype="<f4", count=n * n).reshape(n, n)
    v = np.fromfile(f"{folder}/v.bin", dtype="<f4", count=n)
    if variant == "numpy":
        return lambda: m @ v
    if variant == "numba":
        matvec = matvec_numba()
        return lambda: matvec(m, v)
    if variant == "jax":
        import jax
        import jax.numpy as jnp

        matvec = jax.jit(jnp.matmul)
        dm, dv = jax.device_put(m), jax.device_put(v)
        return lambda: matvec(dm, dv).block_until_ready()
    if variant == "scipy":
        from scipy.linalg.blas import sgemv

        # the row-major matrix is its transpose in column-major order:
        # BLAS's `sgemv` multiplies by the transpose of that
        return lambda: sgemv(1.0, m.T, v, trans=1)
    raise ValueError(f"no variant {variant} of matvec")
