"""PageRank (`src/programs/pagerank.rs`): `iters` iterations over a graph
of `n` vertices given as `m` links, the sources and the targets (int64),
from the uniform distribution. One iteration, all in float32:

    share[v]  = rank[v] / out_degree[v]   (for a vertex with out-links)
    incoming  = the shares of each vertex's in-links, summed
    dangling  = the ranks of the vertices without out-links, summed
    rank[v]   = base + damping * (incoming[v] + dangling / n)

with `base = (1 - damping) / n`. These are the reference's float32
operations; only the order of the two kinds of sums differs between
variants (and NumPy adds the incoming shares in float64, rounding each
sum once to float32), which the benchmark's per-vertex bound allows for.

NumPy and JAX are the push form, as `rust-seq` and ours: every link adds
its source's share into its target, the out-degrees counted in the timed
run. Numba and SciPy are the pull form, as `rust-rayon`: the links
grouped by target (a stable sort, each target's sources in link order)
and the out-degrees, made once in `setup` as a pull PageRank stores its
graph, and each target's in-links summed."""

import numpy as np


def by_target(sources, targets, n):
    """The graph grouped by target: `offsets` (n + 1, int64) and, in
    `from_[offsets[v]:offsets[v + 1]]` (int32), the sources of `v`'s
    in-links in link order; and the out-degrees (int32)."""
    order = np.argsort(targets, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(targets, minlength=n), out=offsets[1:])
    from_ = sources[order].astype(np.int32)
    degrees = np.bincount(sources, minlength=n).astype(np.int32)
    return offsets, from_, degrees


def pagerank_numpy(sources, targets, n, iters, damping):
    """Push: each iteration's shares gathered per link and added into the
    targets by `np.bincount` with weights. `bincount` adds in float64;
    a sum of float32 shares in float64 rounded once to float32 is within
    `u32 * |s| + 2 * gamma64_{k-1} * sum |c|` of the exact sum `s` of its
    `k` shares `c` (u32 = 2^-24, gamma64_j about j * 2^-53), no further
    than the reference's float32 sum in some order may be
    (`gamma32_{k-1} * sum |c|`): for k = 1 both are exact, for k = 2
    `gamma32_1 - u32` is about 2^-48, above 2 * 2^-53, and beyond that
    `gamma32_{k-1} - u32` is at least `(k - 2) * 2^-24`. The bound the
    check uses assumes only that much of each sum."""
    nf = np.float32(n)
    degrees = np.bincount(sources, minlength=n)
    dangling = degrees == 0
    degrees = degrees.astype(np.float32)
    base = (np.float32(1.0) - damping) / nf
    ranks = np.full(n, np.float32(1.0) / nf, dtype=np.float32)
    shares = np.zeros(n, dtype=np.float32)
    for _ in range(iters):
        np.divide(ranks, degrees, out=shares, where=~dangling)
        incoming = np.bincount(targets, weights=shares[sources], minlength=n).astype(np.float32)
        spread = ranks[dangling].sum() / nf
        ranks = base + damping * (incoming + spread)
    return ranks


def pagerank_numba():
    """Pull, as `rust-rayon`: each iteration the shares and the dangling
    sum (a parallel reduction) over the vertices, then each target's sum
    of its sources' shares in link order, the targets in parallel."""
    from numba import njit, prange

    @njit(parallel=True)
    def pagerank(offsets, from_, degrees, iters, damping):
        n = degrees.shape[0]
        nf = np.float32(n)
        base = (np.float32(1.0) - damping) / nf
        ranks = np.full(n, np.float32(1.0) / nf, dtype=np.float32)
        shares = np.empty(n, dtype=np.float32)
        for _ in range(iters):
            dangling = np.float32(0.0)
            for v in prange(n):
                if degrees[v] == 0:
                    shares[v] = np.float32(0.0)
                    dangling += ranks[v]
                else:
                    shares[v] = ranks[v] / np.float32(degrees[v])
            spread = dangling / nf
            for v in prange(n):
                inc = np.float32(0.0)
                for k in range(offsets[v], offsets[v + 1]):
                    inc += shares[from_[k]]
                ranks[v] = base + damping * (inc + spread)
        return ranks

    return pagerank


def pagerank_jax(n, iters, damping):
    """Push, as NumPy: `jax.ops.segment_sum` of the shares gathered per
    link into the targets (float32, in XLA's order), the out-degrees a
    scatter-add of ones, the iterations a `fori_loop`. `n` (as float32)
    and `base` are arguments, not constants: XLA turns a division by a
    constant into a multiplication by its reciprocal, two roundings where
    the reference has one (so that `dangling / n` could fall outside the
    bound where `n` is not a power of two). XLA does fuse
    `base + damping * t` into one multiply-add (one rounding instead of
    two), which the bound allows: from the first iteration on, each `t`
    has a nonzero bound (that of the dangling sum's order, there being
    more than one dangling vertex), and the bound of the result then
    counts a rounding of the product, which the fused form leaves out."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def pagerank(sources, targets, nf, base):
        degrees = jnp.zeros(n, jnp.int32).at[sources].add(1)
        dangling = degrees == 0
        # (a dangling vertex's share is never read: divided by 1, not 0)
        divisors = jnp.where(dangling, 1, degrees).astype(jnp.float32)

        def step(_, ranks):
            incoming = jax.ops.segment_sum((ranks / divisors)[sources], targets, num_segments=n)
            spread = jnp.sum(jnp.where(dangling, ranks, jnp.float32(0.0))) / nf
            return base + damping * (incoming + spread)

        return jax.lax.fori_loop(0, iters, step, jnp.full(n, jnp.float32(1.0) / nf))

    return pagerank


def pagerank_scipy(sources, targets, n):
    """Pull, as a sparse matrix-vector product: the matrix has a row per
    target with a 1 at each in-link's source (the CSR arrays of
    `by_target`, a link repeated as often as it is, so each product is a
    share times 1, exact, and each row is summed in float32 in link
    order), made once; each iteration multiplies it by the shares."""
    from scipy.sparse import csr_array

    offsets, from_, degrees = by_target(sources, targets, n)
    a = csr_array((np.ones(from_.shape[0], dtype=np.float32), from_, offsets), shape=(n, n))
    dangling = degrees == 0
    degrees = degrees.astype(np.float32)
    nf = np.float32(n)

    def pagerank(iters, damping):
        base = (np.float32(1.0) - damping) / nf
        ranks = np.full(n, np.float32(1.0) / nf, dtype=np.float32)
        shares = np.zeros(n, dtype=np.float32)
        for _ in range(iters):
            np.divide(ranks, degrees, out=shares, where=~dangling)
            spread = ranks[dangling].sum() / nf
            ranks = base + damping * (a @ shares + spread)
        return ranks

    return pagerank


def setup(variant, folder, args):
    """A function of no arguments computing the ranks."""
    n, m, iters = int(args[0]), int(args[1]), int(args[2])
    damping = np.float32(args[3])
    sources = np.fromfile(f"{folder}/from.bin", dtype="<i8", count=m)
    targets = np.fromfile(f"{folder}/to.bin", dtype="<i8", count=m)
    if variant == "numpy":
        return lambda: pagerank_numpy(sources, targets, n, iters, damping)
    if variant == "numba":
        pagerank = pagerank_numba()
        offsets, from_, degrees = by_target(sources, targets, n)
        return lambda: pagerank(offsets, from_, degrees, iters, damping)
    if variant == "jax":
        import jax

        # the vertex numbers as int32 (JAX's default width; every one is
        # below 2^31), the same values
        pagerank = pagerank_jax(n, iters, damping)
        ds, dt = jax.device_put(sources.astype(np.int32)), jax.device_put(targets.astype(np.int32))
        nf = np.float32(n)
        base = (np.float32(1.0) - damping) / nf
        return lambda: pagerank(ds, dt, nf, base).block_until_ready()
    if variant == "scipy":
        pagerank = pagerank_scipy(sources, targets, n)
        return lambda: pagerank(iters, damping)
    raise ValueError(f"no variant {variant} of pagerank")
