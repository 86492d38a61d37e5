"""Floyd-Warshall all-pairs shortest paths on a dense matrix of i32
distances (`src/programs/floyd.rs`)."""

import numpy as np


def floyd_numpy(g):
    """Each step relaxes the whole matrix through vertex k at once."""
    d = g.copy()
    for k in range(d.shape[0]):
        np.minimum(d, d[:, k, None] + d[None, k, :], out=d)
    return d


def floyd_numba():
    """In place, each step's rows in parallel (row and column k do not
    change during step k, since d[k, k] = 0)."""
    from numba import njit, prange

    @njit(parallel=True)
    def floyd(g):
        d = g.copy()
        n = d.shape[0]
        for k in range(n):
            for i in prange(n):
                dik = d[i, k]
                for j in range(n):
                    d[i, j] = min(d[i, j], dik + d[k, j])
        return d

    return floyd


def floyd_jax():
    import jax
    import jax.numpy as jnp
    from jax import lax

    @jax.jit
    def floyd(d):
        def step(k, d):
            return jnp.minimum(d, d[:, k, None] + d[None, k, :])

        return lax.fori_loop(0, d.shape[0], step, d)

    return floyd


def setup(variant, folder, args):
    """A function of no arguments returning the shortest distances, i32."""
    n = int(args[0])
    g = np.fromfile(f"{folder}/graph.bin", dtype="<i4", count=n * n).reshape(n, n)
    if variant == "numpy":
        return lambda: floyd_numpy(g)
    if variant == "numba":
        floyd = floyd_numba()
        return lambda: floyd(g)
    if variant == "jax":
        import jax

        floyd = floyd_jax()
        device_g = jax.device_put(g)
        return lambda: floyd(device_g).block_until_ready()
    if variant == "scipy":
        from scipy.sparse.csgraph import floyd_warshall

        # SciPy computes in f64, exact on these integers; a missing edge
        # is our finite INF weight, so its paths add up as ours do
        g64 = g.astype(np.float64)
        return lambda: floyd_warshall(g64, directed=True).astype(np.int32)
    raise ValueError(f"no variant {variant} of floyd")
