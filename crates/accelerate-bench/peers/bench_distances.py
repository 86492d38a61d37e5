"""Pairwise squared Euclidean distances between the rows of two float32
matrices (`src/programs/distances.rs`)."""

import numpy as np

# Rows of x that the NumPy peer broadcasts against all of y at once: its
# BLOCK x n x d float32 intermediate is 2 MiB at the small size and 64 MiB
# at the large, instead of the whole m x n x d.
BLOCK = 32


def distances_numba():
    """One row of the result per parallel iteration, each element's sum in
    float32 in the order of k."""
    from numba import njit, prange

    @njit(parallel=True)
    def distances(x, y, out):
        m, d = x.shape
        n = y.shape[0]
        for i in prange(m):
            for j in range(n):
                s = np.float32(0.0)
                for k in range(d):
                    t = x[i, k] - y[j, k]
                    s += t * t
                out[i, j] = s

    return distances


def setup(variant, folder, args):
    """A function of no arguments computing the m x n distances."""
    m, d, n = (int(a) for a in args[:3])
    x = np.fromfile(f"{folder}/x.bin", dtype="<f4", count=m * d).reshape(m, d)
    y = np.fromfile(f"{folder}/y.bin", dtype="<f4", count=n * d).reshape(n, d)
    if variant == "numpy":
        out = np.empty((m, n), dtype=np.float32)

        def run():
            for i in range(0, m, BLOCK):
                xb = x[i : i + BLOCK]
                out[i : i + BLOCK] = ((xb[:, None, :] - y[None, :, :]) ** 2).sum(axis=-1)
            return out

        return run
    if variant == "numba":
        distances = distances_numba()
        out = np.empty((m, n), dtype=np.float32)

        def run():
            distances(x, y, out)
            return out

        return run
    if variant == "jax":
        import jax
        import jax.numpy as jnp

        distances = jax.jit(lambda x, y: jnp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1))
        dx, dy = jax.device_put(x), jax.device_put(y)
        return lambda: distances(dx, dy).block_until_ready()
    if variant == "scipy":
        from scipy.spatial.distance import cdist

        # cdist computes in float64
        return lambda: cdist(x, y, "sqeuclidean").astype(np.float32)
    raise ValueError(f"no variant {variant} of distances")
