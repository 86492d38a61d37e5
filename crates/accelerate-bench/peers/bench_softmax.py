"""Row-wise softmax of a float32 matrix (`src/programs/softmax.rs`):
``exp(x - max x) / sum exp(x - max x)`` for every row."""

import numpy as np


def softmax_numpy(m):
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_numba():
    from numba import njit, prange

    @njit(parallel=True)
    def softmax(m, out):
        rows, cols = m.shape
        for i in prange(rows):
            top = m[i, 0]
            for j in range(1, cols):
                top = max(top, m[i, j])
            s = np.float32(0.0)
            for j in range(cols):
                e = np.exp(m[i, j] - top)
                out[i, j] = e
                s += e
            for j in range(cols):
                out[i, j] = out[i, j] / s

    return softmax


def setup(variant, folder, args):
    """A function of no arguments computing the softmax of every row."""
    rows, cols = int(args[0]), int(args[1])
    m = np.fromfile(f"{folder}/m.bin", dtype="<f4", count=rows * cols).reshape(rows, cols)
    if variant == "numpy":
        return lambda: softmax_numpy(m)
    if variant == "numba":
        softmax = softmax_numba()
        out = np.empty_like(m)

        def run():
            softmax(m, out)
            return out

        return run
    if variant == "jax":
        import jax

        softmax = jax.jit(lambda x: jax.nn.softmax(x, axis=1))
        dm = jax.device_put(m)
        return lambda: softmax(dm).block_until_ready()
    if variant == "scipy":
        from scipy.special import softmax

        return lambda: softmax(m, axis=1)
    raise ValueError(f"no variant {variant} of softmax")
