"""The Mandelbrot set (`src/programs/mandelbrot.rs`): the iteration count
of every pixel of a height x width image (int32, row by row), iterating
z <- z^2 + c from z = 0 while |z|^2 <= 4 and fewer than `limit`
iterations were made.

Every variant performs the reference's float32 operations in its order
(`accelerate_programs::mandelbrot::escape_time`): the pixel's point
``c = (x0 + col * step, y0 + row * step)``, the test ``zr * zr + zi * zi
<= 4``, and the step ``(zr * zr - zi * zi + cr, 2 * zr * zi + ci)``, each
operation rounded to float32 on its own, so that the counts are the
reference's exactly (the benchmark compares them exactly: the iteration
is chaotic near the set's boundary, where one rounding more or less
changes a count). SciPy has no Mandelbrot set, so no variant.

NumPy and Numba write into an output made once in `setup`, as the Rust
versions do."""

import numpy as np

FOUR, TWO = np.float32(4.0), np.float32(2.0)


def points(width, height, x0, y0, step):
    """Each column's real part and each row's imaginary part, as the
    reference computes them (the index converted, times the step, plus
    the corner, in float32)."""
    cr = x0 + np.arange(width, dtype=np.float32) * step
    ci = y0 + np.arange(height, dtype=np.float32) * step
    return cr, ci


def mandelbrot_numpy(width, height, limit, x0, y0, step, out):
    """Whole-array steps over the pixels that have not escaped yet, which
    are packed after every step that some escape at (so that the work
    shrinks as the image's pixels escape; the ones inside the set run to
    the limit). `out` is flat."""
    cr, ci = points(width, height, x0, y0, step)
    cr, ci = np.tile(cr, height), np.repeat(ci, width)
    left = np.arange(width * height)  # the pixels still iterating
    zr = np.zeros(width * height, dtype=np.float32)
    zi = np.zeros(width * height, dtype=np.float32)
    for i in range(limit):
        zr2, zi2 = zr * zr, zi * zi
        inside = zr2 + zi2 <= FOUR
        if not inside.all():
            out[left[~inside]] = i
            left, zr, zi, zr2, zi2, cr, ci = (a[inside] for a in (left, zr, zi, zr2, zi2, cr, ci))
            if left.size == 0:
                break
        zi = TWO * zr * zi + ci
        zr = zr2 - zi2 + cr
    out[left] = limit
    return out


def mandelbrot_numba():
    """One row per parallel iteration, each pixel the reference's loop.
    The rows are handed out to the threads one at a time as they finish
    (`parallel_chunksize(1)`), as the rows through the set cost far more
    than those above and below it; every constant is a float32 (Numba
    types a bare ``2.0`` as float64, which would carry the step into
    float64 and change the counts)."""
    from numba import njit, parallel_chunksize, prange

    @njit(parallel=True)
    def mandelbrot(limit, x0, y0, step, out):
        height, width = out.shape
        with parallel_chunksize(1):
            for row in prange(height):
                ci = y0 + np.float32(row) * step
                for col in range(width):
                    cr = x0 + np.float32(col) * step
                    zr = np.float32(0.0)
                    zi = np.float32(0.0)
                    i = 0
                    while zr * zr + zi * zi <= FOUR and i < limit:
                        zr, zi = zr * zr - zi * zi + cr, TWO * zr * zi + ci
                        i += 1
                    out[row, col] = i

    return mandelbrot


def mandelbrot_jax(limit):
    """The image as one array stepped by `lax.while_loop`, each step
    advancing the pixels that have not escaped (a `where`), until none is
    left or the limit is reached: the form `vmap` of a pixel's while loop
    takes too.

    XLA compiles for the CPU with the contraction of a multiply and an add
    into one fused multiply-add always on: a product feeding an add in the
    same fused kernel is not rounded on its own, which changes counts near
    the set's boundary (and it removes optimisation barriers and no-op
    roundings before it fuses, so neither keeps the two apart). So no
    product feeds an add within a step: the state carried from step to
    step is ``zr * zr``, ``zi * zi`` and ``2 * zr * zi`` (``z`` itself is
    not needed), computed at the end of a step from the new ``z`` and read
    by the next step rounded, from memory; an escaped pixel keeps its
    values. The points ``c`` come from NumPy (`points`, the reference's
    roundings)."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def mandelbrot(cr, ci):
        cr, ci = cr[None, :], ci[:, None]

        def cond(state):
            *_, i, any_inside = state
            return any_inside & (i < limit)

        def body(state):
            zr2, zi2, zrzi2, counts, i, _ = state
            inside = zr2 + zi2 <= FOUR
            zr, zi = zr2 - zi2 + cr, zrzi2 + ci
            new = (zr * zr, zi * zi, TWO * zr * zi)
            zr2, zi2, zrzi2 = (jnp.where(inside, a, b) for a, b in zip(new, (zr2, zi2, zrzi2)))
            return zr2, zi2, zrzi2, counts + inside, i + 1, jnp.any(inside)

        zero = jnp.zeros((ci.shape[0], cr.shape[1]), jnp.float32)
        counts = jnp.zeros(zero.shape, jnp.int32)
        start = (zero, zero, zero, counts, jnp.int32(0), jnp.bool_(True))
        return jax.lax.while_loop(cond, body, start)[3]

    return mandelbrot


def setup(variant, folder, args):
    """A function of no arguments computing the iteration counts."""
    width, height, limit = int(args[0]), int(args[1]), int(args[2])
    x0, y0, step = np.float32(args[3]), np.float32(args[4]), np.float32(args[5])
    if variant == "numpy":
        out = np.empty(width * height, dtype=np.int32)
        return lambda: mandelbrot_numpy(width, height, limit, x0, y0, step, out)
    if variant == "numba":
        mandelbrot = mandelbrot_numba()
        out = np.empty((height, width), dtype=np.int32)

        def run():
            mandelbrot(limit, x0, y0, step, out)
            return out

        return run
    if variant == "jax":
        mandelbrot = mandelbrot_jax(limit)
        return lambda: mandelbrot(*points(width, height, x0, y0, step)).block_until_ready()
    raise ValueError(f"no variant {variant} of mandelbrot")
