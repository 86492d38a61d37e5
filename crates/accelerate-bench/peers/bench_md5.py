"""MD5 hash recovery (`src/programs/md5.rs`): the index of the first word
of a dictionary whose MD5 digest is a given one, or NOT_FOUND (the
largest int64), as one int64.

The dictionary is n padded words, a 64-byte MD5 block each (n rows of 16
uint32, little-endian), and the digest its four state words A, B, C, D
(uint32). Every variant hashes every word (no early exit at the first
match), as the Rust ones do: one application of the compression function
to the initial state (RFC 1321 §3.4), 64 steps of uint32 arithmetic with
wrapping adds and rotations. SciPy has no operation for it, so there is
no `scipy` variant."""

import numpy as np

NOT_FOUND = np.iinfo(np.int64).max

# RFC 1321 §3.3-3.4: the initial state, each step's additive constant
# floor(|sin(i + 1)| 2^32), rotation, and message word (i, 5i + 1, 3i + 5
# and 7i modulo 16, by round)
INIT = np.array([0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476], dtype=np.uint32)
K = np.floor(np.abs(np.sin(np.arange(1, 65))) * 2.0**32).astype(np.uint32)
SHIFTS = np.array([7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4, dtype=np.uint32)
WORD = np.array([(i, 5 * i + 1, 3 * i + 5, 7 * i)[i // 16] % 16 for i in range(64)])


def digests_numpy(m):
    """The digests of the words whose message words are the rows of `m`
    (16 x B, word j of every block together): the 64 steps as whole-array
    operations, in place in a few arrays of B."""
    size = m.shape[1]
    a, b, c, d = (np.full(size, v, dtype=np.uint32) for v in INIT)
    f = np.empty(size, dtype=np.uint32)
    tmp = np.empty(size, dtype=np.uint32)
    for i in range(64):
        # f, the round's function of b, c, d
        if i < 16:
            np.bitwise_and(b, c, out=f)
            np.invert(b, out=tmp)
            tmp &= d
            f |= tmp
        elif i < 32:
            np.bitwise_and(b, d, out=f)
            np.invert(d, out=tmp)
            tmp &= c
            f |= tmp
        elif i < 48:
            np.bitwise_xor(b, c, out=f)
            f ^= d
        else:
            np.invert(d, out=f)
            f |= b
            f ^= c
        # b + rotl(a + f + K + M[g], s), into f
        f += a
        f += K[i]
        f += m[WORD[i]]
        np.left_shift(f, SHIFTS[i], out=tmp)
        f >>= 32 - SHIFTS[i]
        f |= tmp
        f += b
        # (a, d, c, b) = (d, c, b, f), the old a's array the next f
        a, b, c, d, f = d, f, b, c, a
    return a + INIT[0], b + INIT[1], c + INIT[2], d + INIT[3]


def search_numpy(blocks, target, block):
    """Blocks of `block` words, each transposed so that word j of every
    block is one contiguous row, hashed by `digests_numpy`. Whole-array
    steps over all 2^22 words at the large size stream 16 MiB arrays
    through memory some 600 times and took twice as long as blocks whose
    arrays (64 KiB each) stay in the cache."""
    first = NOT_FOUND
    for start in range(0, blocks.shape[0], block):
        m = np.ascontiguousarray(blocks[start : start + block].T)
        a, b, c, d = digests_numpy(m)
        hits = np.flatnonzero((a == target[0]) & (b == target[1]) & (c == target[2]) & (d == target[3]))
        if hits.size:
            first = min(first, start + int(hits[0]))
    return np.int64(first)


def search_numba(lanes):
    """Groups of `lanes` words in parallel (`prange`), each group's
    message transposed so that word j of every lane is one row, and every
    step one loop over the lanes, which LLVM vectorises (as `rust-rayon`
    does, and password crackers: several candidates an instruction);
    the smallest matching index by `prange`'s `min` reduction. Numba
    computes on uint32 operands in 64 bits (its integer typing), so the
    sums and the rotation are cut back to uint32 (`np.uint32`). One word
    per parallel iteration, the 64 steps on scalars, took 3 to 6 times as
    long (no vector instructions)."""
    from numba import njit, prange

    init, k, shifts, word = INIT, K, SHIFTS, WORD

    @njit(inline="always")
    def step(a, b, f, k, s, m):
        # b + rotl(a + f + K + M[g], s), in uint32
        t = np.uint32(a + f + k + m)
        return np.uint32(b + np.uint32((t << s) | (t >> (np.uint32(32) - s))))

    @njit(parallel=True)
    def search(blocks, target):
        n = blocks.shape[0]
        first = NOT_FOUND
        for g in prange((n + lanes - 1) // lanes):
            m = np.ascontiguousarray(blocks[g * lanes : (g + 1) * lanes].T)
            count = m.shape[1]  # the last group may be short
            a, b = np.full(count, init[0]), np.full(count, init[1])
            c, d = np.full(count, init[2]), np.full(count, init[3])
            # each step writes its new b into a's array, then
            # (a, d, c, b) = (d, c, b, new b) renames the arrays
            for i in range(16):
                mi = m[word[i]]
                for l in range(count):
                    a[l] = step(a[l], b[l], (b[l] & c[l]) | (~b[l] & d[l]), k[i], shifts[i], mi[l])
                a, b, c, d = d, a, b, c
            for i in range(16, 32):
                mi = m[word[i]]
                for l in range(count):
                    a[l] = step(a[l], b[l], (b[l] & d[l]) | (c[l] & ~d[l]), k[i], shifts[i], mi[l])
                a, b, c, d = d, a, b, c
            for i in range(32, 48):
                mi = m[word[i]]
                for l in range(count):
                    a[l] = step(a[l], b[l], b[l] ^ c[l] ^ d[l], k[i], shifts[i], mi[l])
                a, b, c, d = d, a, b, c
            for i in range(48, 64):
                mi = m[word[i]]
                for l in range(count):
                    a[l] = step(a[l], b[l], c[l] ^ (b[l] | ~d[l]), k[i], shifts[i], mi[l])
                a, b, c, d = d, a, b, c
            found = NOT_FOUND
            for l in range(count - 1, -1, -1):
                if (
                    np.uint32(a[l] + init[0]) == target[0]
                    and np.uint32(b[l] + init[1]) == target[1]
                    and np.uint32(c[l] + init[2]) == target[2]
                    and np.uint32(d[l] + init[3]) == target[3]
                ):
                    found = np.int64(g * lanes + l)
            first = min(first, found)
        return first

    return search


def search_jax():
    """The 64 steps on whole uint32 columns (word j of every block), one
    fused loop over the words after `jit`, and the smallest matching
    index by a `min` over all of them."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def search(blocks, target):
        m = [blocks[:, j] for j in range(16)]
        a, b, c, d = (jnp.uint32(v) for v in INIT)
        for i in range(64):
            if i < 16:
                f = (b & c) | (~b & d)
            elif i < 32:
                f = (b & d) | (c & ~d)
            elif i < 48:
                f = b ^ c ^ d
            else:
                f = c ^ (b | ~d)
            t = a + f + K[i] + m[WORD[i]]
            s = int(SHIFTS[i])
            a, d, c, b = d, c, b, b + ((t << s) | (t >> (32 - s)))
        hit = (a + INIT[0] == target[0]) & (b + INIT[1] == target[1])
        hit &= (c + INIT[2] == target[2]) & (d + INIT[3] == target[3])
        index = jnp.arange(blocks.shape[0], dtype=jnp.int64)
        return jnp.min(jnp.where(hit, index, NOT_FOUND))

    return search


def setup(variant, folder, args):
    """A function of no arguments computing the first match's index, as
    one int64."""
    n = int(args[0])
    blocks = np.fromfile(f"{folder}/blocks.bin", dtype="<u4", count=16 * n).reshape(n, 16)
    target = np.fromfile(f"{folder}/target.bin", dtype="<u4", count=4)
    if variant == "numpy":
        # 2^14 words a block: 1 MiB of message words, 64 KiB a state word
        return lambda: search_numpy(blocks, target, 1 << 14)
    if variant == "numba":
        # 64 lanes: eight AVX2 vectors a state word (16 and 32 lanes
        # took 2.5 and 1.3 times as long at 2^20 words here)
        search = search_numba(64)
        return lambda: np.int64(search(blocks, target))
    if variant == "jax":
        import jax

        # the int64 index and NOT_FOUND (JAX makes every array 32-bit
        # without it; the uint32 arithmetic stays uint32)
        jax.config.update("jax_enable_x64", True)
        search = search_jax()
        db, dt = jax.device_put(blocks), jax.device_put(target)
        return lambda: search(db, dt).block_until_ready()
    raise ValueError(f"no variant {variant} of md5")
