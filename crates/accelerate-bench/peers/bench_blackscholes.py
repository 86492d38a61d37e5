"""Black-Scholes option pricing (`src/programs/blackscholes.rs`): the call
and the put price of every option (price, strike, years), in float32, by
the reference's formula (`accelerate_programs::blackscholes::callput_ref`)
operation for operation: the cumulative normal distribution by the
polynomial approximation of Abramowitz and Stegun 26.2.17, the same
constants, the same order of operations. The options come as three
arrays; the result is the calls, then the puts (float32 each).

Numba writes into outputs made once in `setup`, as the Rust versions
do; NumPy and JAX run the same whole-array function (`prices`), whose
intermediates and results are new arrays. SciPy has no variant: its
cumulative normal (`scipy.special.ndtr`) is another function (exact to
double precision, not the approximation the benchmark computes), and
the rest is the same NumPy array arithmetic."""

import numpy as np

# Abramowitz and Stegun 26.2.17 (the reference's `COEFF`), its `k`'s
# factor, and 1 / sqrt(2 pi), rounded to float32 as the Rust literals are
COEFF = tuple(
    np.float32(c) for c in (0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429)
)
K = np.float32(0.2316419)
RSQRT2PI = np.float32(0.39894228040143267793994605993438)
HALF, ONE = np.float32(0.5), np.float32(1.0)


def cnd(xp, d):
    """The cumulative normal at every element of `d`, in `xp` (NumPy or
    jax.numpy): ``c`` where ``d <= 0``, ``1 - c`` where ``d > 0``, with
    ``c = rsqrt2pi * exp(-d^2 / 2) * k * (c0 + k * (c1 + k * (c2 + k * (c3
    + k * c4))))``, ``k = 1 / (1 + 0.2316419 |d|)``."""
    k = ONE / (ONE + K * xp.abs(d))
    poly = COEFF[4]
    for c in COEFF[3::-1]:
        poly = c + k * poly
    c = RSQRT2PI * xp.exp(-HALF * d * d) * (k * poly)
    return xp.where(d > 0, ONE - c, c)


def prices(xp, price, strike, years, r, v):
    """The calls and the puts, in `xp` (NumPy or jax.numpy): whole-array
    arithmetic, every intermediate an array."""
    v_sqrt_t = v * xp.sqrt(years)
    d1 = (xp.log(price / strike) + (r + HALF * v * v) * years) / v_sqrt_t
    d2 = d1 - v_sqrt_t
    cnd_d1 = cnd(xp, d1)
    cnd_d2 = cnd(xp, d2)
    x_exp_rt = strike * xp.exp(-r * years)
    call = price * cnd_d1 - x_exp_rt * cnd_d2
    put = x_exp_rt * (ONE - cnd_d2) - price * (ONE - cnd_d1)
    return call, put


def blackscholes_numba():
    """One option per parallel iteration. Every constant is a float32
    (Numba types a bare literal such as ``0.5`` as float64, which would
    carry the arithmetic into float64)."""
    from numba import njit, prange

    c0, c1, c2, c3, c4 = COEFF

    @njit(inline="always")
    def cnd_of(d):
        # `cnd` of one value
        k = ONE / (ONE + K * abs(d))
        poly = c0 + k * (c1 + k * (c2 + k * (c3 + k * c4)))
        c = RSQRT2PI * np.exp(-HALF * d * d) * (k * poly)
        return ONE - c if d > 0 else c

    @njit(parallel=True)
    def blackscholes(price, strike, years, r, v, call, put):
        drift = r + HALF * v * v
        for i in prange(price.shape[0]):
            v_sqrt_t = v * np.sqrt(years[i])
            d1 = (np.log(price[i] / strike[i]) + drift * years[i]) / v_sqrt_t
            d2 = d1 - v_sqrt_t
            cnd_d1 = cnd_of(d1)
            cnd_d2 = cnd_of(d2)
            x_exp_rt = strike[i] * np.exp(-r * years[i])
            call[i] = price[i] * cnd_d1 - x_exp_rt * cnd_d2
            put[i] = x_exp_rt * (ONE - cnd_d2) - price[i] * (ONE - cnd_d1)

    return blackscholes


def blackscholes_jax(r, v):
    import jax
    import jax.numpy as jnp

    @jax.jit
    def blackscholes(price, strike, years):
        return prices(jnp, price, strike, years, r, v)

    return blackscholes


def setup(variant, folder, args):
    """A function of no arguments computing the calls and the puts."""
    n = int(args[0])
    r, v = np.float32(args[1]), np.float32(args[2])
    price, strike, years = (
        np.fromfile(f"{folder}/{name}.bin", dtype="<f4", count=n)
        for name in ("price", "strike", "years")
    )
    if variant == "numpy":
        return lambda: prices(np, price, strike, years, r, v)
    if variant == "numba":
        blackscholes = blackscholes_numba()
        call, put = np.empty(n, dtype=np.float32), np.empty(n, dtype=np.float32)

        def run():
            blackscholes(price, strike, years, r, v, call, put)
            return call, put

        return run
    if variant == "jax":
        import jax

        blackscholes = blackscholes_jax(r, v)
        dp, ds, dy = jax.device_put(price), jax.device_put(strike), jax.device_put(years)
        return lambda: jax.block_until_ready(blackscholes(dp, ds, dy))
    raise ValueError(f"no variant {variant} of blackscholes")
