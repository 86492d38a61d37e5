"""k-means (Lloyd's algorithm) to convergence (`src/programs/kmeans.rs`).

Every variant iterates as the reference does: assign each point to its
nearest centroid (squared distance ``dx * dx + dy * dy`` in float32, the
first of equally near centroids), then move each centroid to the mean of
its points (an empty cluster keeps its centroid), until no assignment
changes or ``MAX`` iterations. The result: ``[iterations, k]`` (int32),
the centroids (float32, k rows of two) and the assignment (int32).
"""

import numpy as np


def kmeans_numpy(points, initial, max_iterations):
    xs, ys = np.ascontiguousarray(points[:, 0]), np.ascontiguousarray(points[:, 1])
    n, k = xs.shape[0], initial.shape[0]
    c = initial.copy()
    assignment = np.full(n, -1, dtype=np.int64)
    changed, iterations = True, 0
    while changed and iterations < max_iterations:
        dx = xs[:, None] - c[None, :, 0]
        dy = ys[:, None] - c[None, :, 1]
        new = np.argmin(dx * dx + dy * dy, axis=1)
        changed = bool((new != assignment).any())
        assignment = new
        counts = np.bincount(assignment, minlength=k)
        sx = np.bincount(assignment, weights=xs, minlength=k)
        sy = np.bincount(assignment, weights=ys, minlength=k)
        nonempty = counts > 0
        c[nonempty, 0] = (sx[nonempty] / counts[nonempty]).astype(np.float32)
        c[nonempty, 1] = (sy[nonempty] / counts[nonempty]).astype(np.float32)
        iterations += 1
    return np.array([iterations, k], dtype=np.int32), c, assignment.astype(np.int32)


def kmeans_numba():
    from numba import njit, prange

    @njit(parallel=True)
    def assign(xs, ys, cx, cy, assignment):
        changed = 0
        for i in prange(xs.shape[0]):
            best = np.int32(-1)
            best_d = np.float32(np.inf)
            for j in range(cx.shape[0]):
                dx = xs[i] - cx[j]
                dy = ys[i] - cy[j]
                d = dx * dx + dy * dy
                if d < best_d:
                    best_d = d
                    best = np.int32(j)
            if assignment[i] != best:
                changed += 1
                assignment[i] = best
        return changed > 0

    @njit
    def sums(xs, ys, assignment, k):
        # one pass, not parallel: the sums into k bins are a small part of
        # an iteration, and per-task partial sums in a `prange` ran some
        # ten times slower on two threads than on one here
        sx = np.zeros(k, dtype=np.float32)
        sy = np.zeros(k, dtype=np.float32)
        m = np.zeros(k, dtype=np.int32)
        for i in range(xs.shape[0]):
            a = assignment[i]
            sx[a] += xs[i]
            sy[a] += ys[i]
            m[a] += 1
        return sx, sy, m

    @njit
    def kmeans(xs, ys, initial, max_iterations):
        k = initial.shape[0]
        cx = initial[:, 0].copy()
        cy = initial[:, 1].copy()
        assignment = np.full(xs.shape[0], np.int32(-1), dtype=np.int32)
        changed, iterations = True, 0
        while changed and iterations < max_iterations:
            changed = assign(xs, ys, cx, cy, assignment)
            sx, sy, m = sums(xs, ys, assignment, k)
            for j in range(k):
                if m[j] > 0:
                    cx[j] = sx[j] / np.float32(m[j])
                    cy[j] = sy[j] / np.float32(m[j])
            iterations += 1
        return iterations, cx, cy, assignment

    return kmeans


def kmeans_jax(max_iterations):
    import jax
    import jax.numpy as jnp

    @jax.jit
    def kmeans(points, initial):
        n, k = points.shape[0], initial.shape[0]
        xs, ys = points[:, 0], points[:, 1]

        def body(state):
            c, old, _, iterations = state
            dx = xs[:, None] - c[None, :, 0]
            dy = ys[:, None] - c[None, :, 1]
            new = jnp.argmin(dx * dx + dy * dy, axis=1).astype(jnp.int32)
            counts = jax.ops.segment_sum(jnp.ones(n, jnp.int32), new, num_segments=k)
            sx = jax.ops.segment_sum(xs, new, num_segments=k)
            sy = jax.ops.segment_sum(ys, new, num_segments=k)
            m = counts.astype(jnp.float32)
            moved = jnp.stack([sx / m, sy / m], axis=1)
            c = jnp.where((counts > 0)[:, None], moved, c)
            return c, new, jnp.any(new != old), iterations + 1

        def cond(state):
            return state[2] & (state[3] < max_iterations)

        start = (initial, jnp.full(n, -1, jnp.int32), jnp.array(True), jnp.int32(0))
        c, assignment, _, iterations = jax.lax.while_loop(cond, body, start)
        return iterations, c, assignment

    return kmeans


def setup(variant, folder, args):
    """A function of no arguments computing the clustering."""
    n, k, max_iterations, iterations = (int(a) for a in args[:4])
    points = np.fromfile(f"{folder}/points.bin", dtype="<f4", count=2 * n).reshape(n, 2)
    initial = np.fromfile(f"{folder}/initial.bin", dtype="<f4", count=2 * k).reshape(k, 2)
    if variant == "numpy":
        return lambda: kmeans_numpy(points, initial, max_iterations)
    if variant == "numba":
        kmeans = kmeans_numba()
        xs, ys = np.ascontiguousarray(points[:, 0]), np.ascontiguousarray(points[:, 1])

        def run():
            i, cx, cy, assignment = kmeans(xs, ys, initial, max_iterations)
            return np.array([i, k], dtype=np.int32), np.stack([cx, cy], axis=1), assignment

        return run
    if variant == "jax":
        import jax

        kmeans = kmeans_jax(max_iterations)
        dp, di = jax.device_put(points), jax.device_put(initial)

        def run():
            i, c, assignment = jax.block_until_ready(kmeans(dp, di))
            return np.array([int(i), k], dtype=np.int32), np.asarray(c), np.asarray(assignment)

        return run
    if variant == "scipy":
        # SciPy's Lloyd's iterations (`kmeans2` from the given centroids)
        # run a fixed number of times and have no test of convergence: it
        # is given the reference's count, so it does the same iterations
        # less the comparisons of assignments
        from scipy.cluster.vq import kmeans2

        def run():
            c, assignment = kmeans2(points, initial, iter=iterations, minit="matrix", missing="warn")
            return np.array([iterations, k], dtype=np.int32), c, assignment.astype(np.int32)

        return run
    raise ValueError(f"no variant {variant} of kmeans")
