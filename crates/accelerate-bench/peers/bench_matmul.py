"""Dense matrix product of two float32 matrices (`src/programs/matmul.rs`)."""

import numpy as np


def matmul_numba():
    """One row of the result per parallel iteration, the loops ordered
    i, l, j so that the innermost runs along rows of B and of the result
    (and vectorises)."""
    from numba import njit, prange

    @njit(parallel=True)
    def matmul(a, b, out):
        m, k = a.shape
        n = b.shape[1]
        for i in prange(m):
            for j in range(n):
                out[i, j] = np.float32(0.0)
            for l in range(k):
                x = a[i, l]
                for j in range(n):
                    out[i, j] += x * b[l, j]

    return matmul


def setup(variant, folder, args):
    """A function of no arguments computing the product."""
    m, k, n = (int(x) for x in args[:3])
    a = np.fromfile(f"{folder}/a.bin", dtype="<f4", count=m * k).reshape(m, k)
    b = np.fromfile(f"{folder}/b.bin", dtype="<f4", count=k * n).reshape(k, n)
    if variant == "numpy":
        return lambda: a @ b
    if variant == "numba":
        matmul = matmul_numba()
        out = np.empty((m, n), dtype=np.float32)

        def run():
            matmul(a, b, out)
            return out

        return run
    if variant == "jax":
        import jax
        import jax.numpy as jnp

        matmul = jax.jit(jnp.matmul)
        da, db = jax.device_put(a), jax.device_put(b)
        return lambda: matmul(da, db).block_until_ready()
    if variant == "scipy":
        from scipy.linalg.blas import sgemm

        # column-major views of the row-major inputs: (B^T A^T)^T = A B
        return lambda: sgemm(1.0, b.T, a.T, trans_a=False, trans_b=False).T
    raise ValueError(f"no variant {variant} of matmul")
