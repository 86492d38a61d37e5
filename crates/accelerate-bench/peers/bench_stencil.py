"""Jacobi relaxation: steps of the 5-point mean with clamped edges
(`src/programs/stencil.rs`). Every variant adds north, west, centre, east
and south in that order and then multiplies by the weight, as the
reference does, so the results agree to the bit."""

import numpy as np


def jacobi_numpy(img, steps, w):
    """Each step on the image padded by its edge pixels (clamp)."""
    a = img
    for _ in range(steps):
        p = np.pad(a, 1, mode="edge")
        a = (p[:-2, 1:-1] + p[1:-1, :-2] + p[1:-1, 1:-1] + p[1:-1, 2:] + p[2:, 1:-1]) * w
    return a


def jacobi_numba():
    """The rows of each step in parallel, the neighbours' indices clamped."""
    from numba import njit, prange

    @njit(parallel=True)
    def jacobi(img, steps, w):
        rows, cols = img.shape
        a = img.copy()
        b = np.empty_like(img)
        for _ in range(steps):
            for i in prange(rows):
                u = max(i - 1, 0)
                d = min(i + 1, rows - 1)
                for j in range(cols):
                    left = max(j - 1, 0)
                    right = min(j + 1, cols - 1)
                    b[i, j] = (a[u, j] + a[i, left] + a[i, j] + a[i, right] + a[d, j]) * w
            a, b = b, a
        return a

    return jacobi


def jacobi_jax(steps):
    import jax
    import jax.numpy as jnp
    from jax import lax

    @jax.jit
    def jacobi(img, w):
        def step(_, a):
            p = jnp.pad(a, 1, mode="edge")
            return (p[:-2, 1:-1] + p[1:-1, :-2] + p[1:-1, 1:-1] + p[1:-1, 2:] + p[2:, 1:-1]) * w

        return lax.fori_loop(0, steps, step, img)

    return jacobi


def setup(variant, folder, args):
    """A function of no arguments returning the image after the steps."""
    rows, cols, steps = int(args[0]), int(args[1]), int(args[2])
    w = np.float32(args[3])
    img = np.fromfile(f"{folder}/image.bin", dtype="<f4", count=rows * cols).reshape(rows, cols)
    if variant == "numpy":
        return lambda: jacobi_numpy(img, steps, w)
    if variant == "numba":
        jacobi = jacobi_numba()
        return lambda: jacobi(img, steps, w)
    if variant == "jax":
        import jax

        jacobi = jacobi_jax(steps)
        device_img = jax.device_put(img)
        return lambda: jacobi(device_img, w).block_until_ready()
    raise ValueError(f"no variant {variant} of stencil")
