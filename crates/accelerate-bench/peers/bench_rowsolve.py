"""A per-row iterative solver (`src/programs/rowsolve.rs`): for each row
of a float64 matrix, the threshold `t` of its projection onto the
simplex (`sum_j max(a_j - t, 0) = 1`), by bisection from
`[min - 1, max]` until the interval is no wider than `width`, the upper
end of the last interval being the row's result (float64).

NumPy and JAX bisect every row at once, as the flat Accelerate program
does: each step computes every row's excess at its midpoint, and a row
whose interval is narrow enough keeps its bounds, until the last row
stops. Numba bisects each row by itself, as the reference does. SciPy
solves every row's equation at once with its vectorised bracketing root
finder, `scipy.optimize.elementwise.find_root` (Chandrupatla's method,
which mixes bisection with inverse quadratic steps), from the same
brackets to half the width.
"""

import numpy as np


def rowsolve_numpy(m, width):
    """The steps over all rows, `tmp` one scratch matrix for the excess."""
    lo = m.min(axis=1) - 1.0
    hi = m.max(axis=1)
    tmp = np.empty_like(m)
    running = hi - lo > width
    while running.any():
        mid = (lo + hi) / 2.0
        np.subtract(m, mid[:, None], out=tmp)
        np.maximum(tmp, 0.0, out=tmp)
        above = tmp.sum(axis=1) > 1.0
        lo = np.where(running & above, mid, lo)
        hi = np.where(running & ~above, mid, hi)
        running = hi - lo > width
    return hi


def rowsolve_numba():
    """One row per parallel iteration, its bisection a scalar loop whose
    step sums the row left to right (the reference's order)."""
    from numba import njit, prange

    @njit(parallel=True)
    def rowsolve(m, width):
        rows, cols = m.shape
        out = np.empty(rows, dtype=np.float64)
        for r in prange(rows):
            lo = m[r, 0]
            hi = m[r, 0]
            for j in range(1, cols):
                lo = min(lo, m[r, j])
                hi = max(hi, m[r, j])
            lo -= 1.0
            while hi - lo > width:
                mid = (lo + hi) / 2.0
                excess = 0.0
                for j in range(cols):
                    excess += max(m[r, j] - mid, 0.0)
                if excess > 1.0:
                    lo = mid
                else:
                    hi = mid
            out[r] = hi
        return out

    return rowsolve


def rowsolve_jax(width):
    """A `while_loop` over every row's bounds, as NumPy."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def rowsolve(m):
        def step(bounds):
            lo, hi = bounds
            mid = (lo + hi) / 2.0
            above = jnp.maximum(m - mid[:, None], 0.0).sum(axis=1) > 1.0
            running = hi - lo > width
            return jnp.where(running & above, mid, lo), jnp.where(running & ~above, mid, hi)

        def unfinished(bounds):
            lo, hi = bounds
            return jnp.any(hi - lo > width)

        start = (m.min(axis=1) - 1.0, m.max(axis=1))
        return jax.lax.while_loop(unfinished, step, start)[1]

    return rowsolve


def rowsolve_scipy(m, width):
    """`find_root` of every row's `excess(t) - 1` from the bracket
    `[min - 1, max]` (where it is positive, then -1), stopping only when
    a row's bracket is narrower than `width / 2` (no relative tolerance,
    no test of the function's value but for an exact 0). Its result, an
    end of that last bracket, is then within `width / 2` of a root of the
    excess as SciPy computes it, and the reference's, the upper end of
    its last interval, within `width` of a root of its own: the two
    roots are within rounding (about 1e-14, the check's comment in
    `rowsolve.rs`) of each other, so the results are within the
    `2 * width` the check allows. The row numbers are the function's
    argument, so that it sums only the rows still running."""
    from scipy.optimize.elementwise import find_root

    def excess(t, row):
        return np.maximum(m[row] - t[:, None], 0.0).sum(axis=1) - 1.0

    rows = np.arange(m.shape[0])
    bracket = (m.min(axis=1) - 1.0, m.max(axis=1))
    tolerances = {"xatol": width / 2, "xrtol": 0.0, "fatol": 0.0, "frtol": 0.0}
    return find_root(excess, bracket, args=(rows,), tolerances=tolerances).x


def setup(variant, folder, args):
    """A function of no arguments computing the thresholds."""
    rows, cols, width = int(args[0]), int(args[1]), float(args[2])
    m = np.fromfile(f"{folder}/m.bin", dtype="<f8", count=rows * cols).reshape(rows, cols)
    if variant == "numpy":
        return lambda: rowsolve_numpy(m, width)
    if variant == "numba":
        rowsolve = rowsolve_numba()
        return lambda: rowsolve(m, width)
    if variant == "jax":
        import jax

        # float64 arrays (JAX makes every array 32-bit without it)
        jax.config.update("jax_enable_x64", True)
        rowsolve = rowsolve_jax(width)
        dm = jax.device_put(m)
        return lambda: rowsolve(dm).block_until_ready()
    if variant == "scipy":
        return lambda: rowsolve_scipy(m, width)
    raise ValueError(f"no variant {variant} of rowsolve")
