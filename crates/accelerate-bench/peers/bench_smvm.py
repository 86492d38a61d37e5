"""Sparse-matrix vector multiplication (`src/programs/smvm.rs`): a square
CSR matrix (row pointer and column indices int64, values float32) times
a dense float32 vector, one float32 result a row (an empty row's is 0).
NumPy and Numba compute from the CSR arrays as the harness wrote them;
SciPy and JAX make their sparse matrix from them once in `setup` (not
timed), as their users hold a matrix that is multiplied again and
again."""

import numpy as np


def smvm_numpy(row_ptr, col_idx, vals, x):
    """The products (a gather of the vector), then the sums of the
    non-empty rows by `np.add.reduceat` at their starts (`reduceat` would
    give an empty row the product at its start, and a start at the very
    end is out of its range): each such row's sum runs to the next
    non-empty row's start, which is its own end. The empty rows are 0."""
    products = vals * x[col_idx]
    starts = row_ptr[:-1]
    nonempty = row_ptr[1:] > starts
    y = np.zeros(row_ptr.shape[0] - 1, dtype=np.float32)
    y[nonempty] = np.add.reduceat(products, starts[nonempty])
    return y


def smvm_numba():
    """One row per parallel iteration, its products summed left to
    right in float32 from 0 (the reference's order), into an output made
    once in `setup` as the Rust versions write in place."""
    from numba import njit, prange

    @njit(parallel=True)
    def smvm(row_ptr, col_idx, vals, x, y):
        for r in prange(y.shape[0]):
            acc = np.float32(0.0)
            for k in range(row_ptr[r], row_ptr[r + 1]):
                acc += vals[k] * x[col_idx[k]]
            y[r] = acc
        return y

    return smvm


def smvm_jax(n):
    """`jax.ops.segment_sum` of the products over each product's row."""
    import jax

    @jax.jit
    def smvm(rows, col_idx, vals, x):
        return jax.ops.segment_sum(vals * x[col_idx], rows, num_segments=n, indices_are_sorted=True)

    return smvm


def setup(variant, folder, args):
    """A function of no arguments computing `A x`."""
    n, nnz = int(args[0]), int(args[1])
    row_ptr = np.fromfile(f"{folder}/row_ptr.bin", dtype="<i8", count=n + 1)
    col_idx = np.fromfile(f"{folder}/col_idx.bin", dtype="<i8", count=nnz)
    vals = np.fromfile(f"{folder}/vals.bin", dtype="<f4", count=nnz)
    x = np.fromfile(f"{folder}/x.bin", dtype="<f4", count=n)
    if variant == "numpy":
        return lambda: smvm_numpy(row_ptr, col_idx, vals, x)
    if variant == "numba":
        smvm = smvm_numba()
        y = np.empty(n, dtype=np.float32)
        return lambda: smvm(row_ptr, col_idx, vals, x, y)
    if variant == "jax":
        import jax

        # the matrix made once in COO form, as JAX's sparse matrices
        # (`jax.experimental.sparse.BCOO`) store it: every non-zero's row
        # (the row numbers repeated by the row lengths) beside its column,
        # int32 (JAX's default width; every index is below 2^31). The
        # rows expanded in each run took about twice the product's time,
        # BCOO's own product (which handles indices out of range) about
        # twice `segment_sum`'s, and BCSR's seconds at 2^20 rows.
        smvm = smvm_jax(n)
        rows = np.repeat(np.arange(n, dtype=np.int32), np.diff(row_ptr))
        dr, dc = jax.device_put(rows), jax.device_put(col_idx.astype(np.int32))
        dv, dx = jax.device_put(vals), jax.device_put(x)
        return lambda: smvm(dr, dc, dv, dx).block_until_ready()
    if variant == "scipy":
        # the matrix object made once from the CSR arrays (not timed), as
        # a SciPy user holds a sparse matrix; its product sums each row
        # in float32 from 0, left to right
        from scipy.sparse import csr_array

        a = csr_array((vals, col_idx, row_ptr), shape=(n, n))
        return lambda: a @ x
    raise ValueError(f"no variant {variant} of smvm")
