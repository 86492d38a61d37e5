"""The audio processor (`src/programs/audio.rs`): each window of a signal
(float32; the windows' starts and lengths, int64, chosen by the Rust
pre-processing, vary from 256 to 2048 samples) gives its Hann-windowed
magnitude spectrum at `bins` fixed frequencies and its zero crossings;
then each window's spectral flux and the onsets.

Bin k of a window x of length L is |sum_n xw[n] tw[(2k + 1) n mod P]
+ i sum_n xw[n] tw[((2k + 1) n + bins) mod P]| / L, where xw[n] = x[n]
(0.5 - 0.5 cos(2 pi n / (L - 1))) and tw is the twiddle table of P
cosines (`accelerate_programs::audio`). The twiddle factors of sample n
do not depend on L, so one table T (2 bins columns, a row per sample up
to the longest window) serves every window, and a window's spectrum is
the product of its windowed samples with the first L rows of T: a matrix
product for many windows at once (BLAS in NumPy, XLA's in JAX), the
windows zero-padded to a common length (the zeros add nothing, exactly).
Every float operation is float32 as on the Rust side, the Hann factor
included (the argument rounded as the Rust side rounds it, then `cos` in
float32: NumPy's within 1.5 ulps of the exact cosine and XLA's within
0.6, measured on every argument of every window length, inside the few
ulps Rust's may differ by); the sums are reassociated and fused (BLAS),
which `audio::check_features` allows (Note [Audio tolerance]).

The post-processing, sequential in the Rust variants too, is the same
NumPy code in every variant (`post_process`). The result: the number of
windows (int64), the magnitudes (float32, `bins` a window), the zero
crossings (int32), the fluxes (float32) and the onsets (int64).

SciPy has no operation for spectra at fixed frequencies over windows of
varying length (`scipy.signal.stft` and `spectrogram` take one window
length and give its FFT bins), so there is no `scipy` variant."""

from functools import partial

import numpy as np

TAU = np.float32(2 * np.pi)
# `accelerate_programs::audio::PostProcessor`'s constants: an onset is a
# peak of the flux above ONSET_FACTOR times the mean of the ONSET_HISTORY
# fluxes before it
ONSET_HISTORY = 16
ONSET_FACTOR = 1.5
# the lengths windows are padded to, in NumPy and JAX: multiples of the
# shortest window (256 samples), so that a window is padded by less than
# that and the groups are few (eight at most)
PAD = 256


def twiddle_table(xp, tw, bins, longest):
    """T (longest x 2 bins): sample n's twiddle factors of the real parts
    (the first `bins` columns) and the imaginary parts, in `xp` (NumPy or
    jax.numpy)."""
    period = tw.shape[0]
    m = xp.arange(longest)[:, None] * (2 * xp.arange(bins) + 1)
    return xp.concatenate([tw[m % period], tw[(m + bins) % period]], axis=1)


def windowed(xp, signal, starts, lengths, width):
    """The windows `starts`, `lengths` (a column each) zero-padded to
    `width` samples (a row each) and multiplied by their Hann windows,
    the argument `TAU * n / (L - 1)` rounded as the Rust side does."""
    n = xp.arange(width)
    inside = n < lengths
    x = signal[xp.minimum(starts + n, signal.shape[0] - 1)]
    h = 0.5 - 0.5 * xp.cos(TAU * n.astype(np.float32) / (lengths.astype(np.float32) - 1))
    return xp.where(inside, x * h, np.float32(0))


def magnitudes_of(xp, spectra, lengths, bins):
    """|re + i im| / L from the spectra's real and imaginary columns."""
    re, im = spectra[:, :bins], spectra[:, bins:]
    return xp.sqrt(re * re + im * im) / lengths.astype(np.float32)


def groups(lengths):
    """The windows grouped by their length padded to a multiple of `PAD`:
    (padded length, the windows' indices) for each group."""
    padded = -(-lengths // PAD) * PAD
    return [(int(p), np.flatnonzero(padded == p)) for p in np.unique(padded)]


def zero_crossings_numpy(signal, starts, lengths):
    """Each window's zero crossings from a prefix count of the signal's:
    cs[i] crossings between samples before i."""
    negative = signal < 0
    cs = np.zeros(signal.shape[0], dtype=np.int64)
    np.cumsum(negative[1:] != negative[:-1], out=cs[1:])
    return (cs[starts + lengths - 1] - cs[starts]).astype(np.int32)


def post_process(magnitudes, zero_crossings):
    """The fluxes and the onsets (`PostProcessor`), vectorised: each
    window's rise over the one before (the first's over zeros) summed, and
    the peaks of the flux above `ONSET_FACTOR` times the mean of the
    fluxes before them (a sliding mean by a float64 prefix sum; the Rust
    side sums in float32, so an onset at the threshold may differ, as it
    may between any variants: the check does not compare onsets)."""
    previous = np.zeros_like(magnitudes)
    previous[1:] = magnitudes[:-1]
    flux = np.maximum(magnitudes - previous, np.float32(0)).sum(axis=1, dtype=np.float32)
    c = np.arange(1, flux.shape[0] - 1)
    sums = np.concatenate([[0.0], np.cumsum(flux, dtype=np.float64)])
    first = np.maximum(c - ONSET_HISTORY, 0)
    mean = (sums[c] - sums[first]) / (c - first)
    peak = (flux[c] > flux[c - 1]) & (flux[c] >= flux[c + 1]) & (flux[c] > ONSET_FACTOR * mean)
    return (
        np.array([magnitudes.shape[0]], dtype=np.int64),
        magnitudes,
        zero_crossings,
        flux,
        c[peak].astype(np.int64),
    )


def audio_numpy(signal, starts, lengths, tw, bins):
    """The windows by groups of one padded length, each group's spectra
    one matrix product (`@`, BLAS's sgemm). Padding every window to the
    longest (2048) made 3.5 times the products at the large size (the
    mean window is about 580 samples) and took 2.5 to 4 times as long."""
    table = twiddle_table(np, tw, bins, int(lengths.max()))
    magnitudes = np.empty((starts.shape[0], bins), dtype=np.float32)
    for width, w in groups(lengths):
        ls = lengths[w][:, None]
        xw = windowed(np, signal, starts[w][:, None], ls, width)
        magnitudes[w] = magnitudes_of(np, xw @ table[:width], ls, bins)
    return post_process(magnitudes, zero_crossings_numpy(signal, starts, lengths))


def audio_numba():
    """One window per parallel iteration: its Hann-windowed samples in
    order, each added into all 2 bins sums at once (the loop over the
    sums vectorises, and each sum still adds its terms left to right, as
    the reference does), and its zero crossings."""
    from numba import njit, prange

    @njit(parallel=True)
    def spectra(signal, starts, lengths, table, bins):
        windows = starts.shape[0]
        magnitudes = np.empty((windows, bins), dtype=np.float32)
        zero_crossings = np.empty(windows, dtype=np.int32)
        for w in prange(windows):
            start, length = starts[w], lengths[w]
            lf = np.float32(length)
            denom = lf - np.float32(1)
            sums = np.zeros(2 * bins, dtype=np.float32)
            crossings = 0
            for n in range(length):
                x = signal[start + n]
                h = np.float32(0.5) - np.float32(0.5) * np.cos(TAU * np.float32(n) / denom)
                v = x * h
                for k in range(2 * bins):
                    sums[k] += v * table[n, k]
                if n > 0 and (signal[start + n - 1] < 0) != (x < 0):
                    crossings += 1
            for k in range(bins):
                re, im = sums[k], sums[bins + k]
                magnitudes[w, k] = np.sqrt(re * re + im * im) / lf
            zero_crossings[w] = crossings
        return magnitudes, zero_crossings

    def run(signal, starts, lengths, tw, bins):
        table = twiddle_table(np, tw, bins, int(lengths.max()))
        return post_process(*spectra(signal, starts, lengths, table, bins))

    return run


def zero_crossings_jax(jnp, signal, starts, lengths):
    """`zero_crossings_numpy` in JAX."""
    negative = signal < 0
    crossings = jnp.cumsum(negative[1:] != negative[:-1], dtype=jnp.int32)
    cs = jnp.concatenate([jnp.zeros(1, jnp.int32), crossings])
    return cs[starts + lengths - 1] - cs[starts]


def audio_jax(bins):
    """The windows grouped as in NumPy (`groups`, on the host), each
    group's spectra a matrix product, under one `jit` specialised to the
    groups' padded lengths (a static argument) and sizes (their index
    arrays' shapes): compiled by the first run, since every run has the
    same windows. Padding every window to the longest instead (one shape,
    no groups) took 3.4 times as long at the large size."""
    import jax
    import jax.numpy as jnp

    @partial(jax.jit, static_argnums=(4,))
    def spectra(signal, starts, lengths, tw, widths, members):
        table = twiddle_table(jnp, tw, bins, widths[-1])
        magnitudes = jnp.zeros((starts.shape[0], bins), jnp.float32)
        for width, w in zip(widths, members):
            ls = lengths[w][:, None]
            xw = windowed(jnp, signal, starts[w][:, None], ls, width)
            magnitudes = magnitudes.at[w].set(magnitudes_of(jnp, xw @ table[:width], ls, bins))
        return magnitudes, zero_crossings_jax(jnp, signal, starts, lengths)

    return spectra


def setup(variant, folder, args):
    """A function of no arguments computing the features."""
    n, windows, bins = int(args[0]), int(args[1]), int(args[2])
    signal = np.fromfile(f"{folder}/signal.bin", dtype="<f4", count=n)
    starts = np.fromfile(f"{folder}/starts.bin", dtype="<i8", count=windows)
    lengths = np.fromfile(f"{folder}/lengths.bin", dtype="<i8", count=windows)
    tw = np.fromfile(f"{folder}/twiddles.bin", dtype="<f4")
    if variant == "numpy":
        return lambda: audio_numpy(signal, starts, lengths, tw, bins)
    if variant == "numba":
        run = audio_numba()
        return lambda: run(signal, starts, lengths, tw, bins)
    if variant == "jax":
        import jax

        spectra = audio_jax(bins)
        # the indices as int32 (JAX's default integers; below 2^31 here)
        d = [jax.device_put(a) for a in (signal, starts.astype(np.int32), lengths.astype(np.int32), tw)]

        def run():
            g = groups(lengths)
            widths = tuple(width for width, _ in g)
            members = [w.astype(np.int32) for _, w in g]
            magnitudes, zero_crossings = jax.block_until_ready(spectra(*d, widths, members))
            return post_process(np.asarray(magnitudes), np.asarray(zero_crossings))

        return run
    raise ValueError(f"no variant {variant} of audio")
