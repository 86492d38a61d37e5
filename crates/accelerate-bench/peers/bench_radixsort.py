"""Sorting i32 keys (`src/programs/radixsort.rs`)."""

import numpy as np


def sort_numba():
    """NumPy's sort compiled by Numba: Numba has no parallel sort, so
    `parallel=True` would change nothing; this is what a Numba user gets."""
    from numba import njit

    @njit
    def sort(keys):
        return np.sort(keys)

    return sort


def setup(variant, folder, args):
    """A function of no arguments returning the keys sorted (a new array,
    as every variant of the benchmark returns)."""
    n = int(args[0])
    keys = np.fromfile(f"{folder}/keys.bin", dtype="<i4", count=n)
    if variant == "numpy":
        return lambda: np.sort(keys)
    if variant == "numba":
        sort = sort_numba()
        return lambda: sort(keys)
    if variant == "jax":
        import jax
        import jax.numpy as jnp

        sort = jax.jit(jnp.sort)
        device_keys = jax.device_put(keys)
        return lambda: sort(device_keys).block_until_ready()
    raise ValueError(f"no variant {variant} of radixsort")
