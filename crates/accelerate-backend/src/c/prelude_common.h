/* accelerate-rs: the helpers that the C prelude (backend/c/prelude.h) and
 * the CUDA prelude (backend/cuda/prelude.cuh) share, written once. Each
 * prelude puts this text where it says `#include "prelude_common.h"`
 * (backend::c::with_common_prelude; neither compiler is given the file),
 * after defining what differs between the targets:
 * - the fixed-width integer types and their limits, isnan and copysign;
 * - ACC_FN, how a helper is declared (`static inline`, or a __device__
 *   function);
 * - the bit casts acc_f32_bits, acc_f64_bits (from bits),
 *   acc_f32_to_bits and acc_f64_to_bits, and the 64-bit bit counts ACC_POPCOUNT64, ACC_CLZ64
 *   and ACC_CTZ64 (the last two of a nonzero operand).
 *
 * The rules these helpers implement are those of docs/semantics.md, and
 * every one is written so that no input has undefined behaviour:
 * - integer arithmetic wraps: it is done in the unsigned type of the same
 *   width (at least `unsigned int`, so that narrow types are not promoted
 *   to a signed `int` that could overflow) and converted back, which GCC,
 *   Clang and NVRTC define as reduction modulo 2^N;
 * - shift amounts are taken modulo the bit width (Rust's wrapping_shl);
 * - division and remainder by zero are checked by the caller before the
 *   helper is called; MIN / -1 wraps to MIN and MIN % -1 is 0;
 * - float to integer conversions saturate, NaN giving 0 (Rust's `as`);
 * - binary16 values are carried as their bits (uint16_t); arithmetic widens
 *   them to float and rounds the result back once.
 */

typedef uint8_t acc_bool;
typedef uint16_t acc_f16;

/* An error a kernel raises: the first one a kernel reports is kept; the
 * host turns it into accelerate::Error, naming the user's source line
 * (`site` indexes the kernel's table of source locations). */
/* (the codes: written here from backend::c::host::ERROR_CODES) */
#define ACC_ERR_VALS 64
typedef struct {
    int32_t code;
    int32_t site;
    int64_t vals[ACC_ERR_VALS];
} acc_err;

/* The arguments of every kernel: the buffers it reads and writes (one per
 * primitive leaf of each array), their extents, the skeleton's integer
 * parameters, the kernel's hoisted literals as 64-bit words, and where to
 * report an error. (On the device, every pointer is device memory.) */
typedef struct {
    void *const *bufs;
    const int64_t *extents;
    const int64_t *params;
    const int64_t *consts;
    acc_err *err;
} acc_args;

ACC_COLD void acc_raise(acc_err *e, int32_t code, int32_t site, int n, const int64_t *vals) {
    if (e->code != ACC_ERR_NONE)
        return;
    e->code = code;
    e->site = site;
    for (int k = 0; k < n && k < ACC_ERR_VALS; k++)
        e->vals[k] = vals[k];
}

/* Hands an error on to an enclosing context (a deferred error reaching a
 * use of its variable, or a kernel's error reaching the host). */
ACC_FN void acc_propagate(acc_err *to, const acc_err *from) {
    if (to->code == ACC_ERR_NONE && from->code != ACC_ERR_NONE)
        *to = *from;
}

/* ---- integers ---------------------------------------------------------- */

/* Note [Narrow division]
   Indices and extents are 64-bit integers, so a remainder by an extent known only at run time
   (a table's length) is a 64-bit division, which x86 cores before Ice Lake take 40 to 90 cycles
   over and GPUs compute in software; LLVM divides such operands in 32 bits when both fit
   (its "idivq-to-divl" bypass), GCC does not. A direct DFT of 4096 points whose twiddle
   position is `(k * t) % n` took 60 ms where the same loop in Rust took 38. So a 64-bit quotient
   or remainder whose operands both lie in 0 .. 2^31 - 1 is computed in 32 bits: they are then
   not negative, and the 32-bit results are the 64-bit ones. */
#define ACC_DIV32(BITS, a, b) ((BITS) == 64 && ((((uint64_t)(a) | (uint64_t)(b)) >> 31) == 0))

#define ACC_INT_OPS(T, U, W, BITS, IS_SIGNED)                                                      \
    ACC_FN T acc_add_##T(T a, T b) { return (T)(U)((W)(U)a + (W)(U)b); }                           \
    ACC_FN T acc_sub_##T(T a, T b) { return (T)(U)((W)(U)a - (W)(U)b); }                           \
    ACC_FN T acc_mul_##T(T a, T b) { return (T)(U)((W)(U)a * (W)(U)b); }                           \
    ACC_FN T acc_neg_##T(T a) { return (T)(U)((W)0 - (W)(U)a); }                                   \
    ACC_FN T acc_abs_##T(T a) { return (IS_SIGNED && a < (T)0) ? acc_neg_##T(a) : a; }            \
    ACC_FN T acc_signum_##T(T a) { return (T)((a > (T)0) - (IS_SIGNED && a < (T)0)); }             \
    /* the divisor is not zero; 64-bit operands that both fit in 31 bits are divided in 32 bits   \
       (Note [Narrow division]) */                                      \
    ACC_FN T acc_quot_##T(T a, T b) {                                                              \
        if (ACC_DIV32(BITS, a, b)) return (T)((uint32_t)(U)a / (uint32_t)(U)b);                    \
        return (IS_SIGNED && b == (T)-1) ? acc_neg_##T(a) : (T)(a / b);                           \
    }                                                                                              \
    ACC_FN T acc_rem_##T(T a, T b) {                                                               \
        if (ACC_DIV32(BITS, a, b)) return (T)((uint32_t)(U)a % (uint32_t)(U)b);                    \
        return (IS_SIGNED && b == (T)-1) ? (T)0 : (T)(a % b);                                      \
    }                                                                                              \
    ACC_FN T acc_idiv_##T(T a, T b) {                                                              \
        T q = acc_quot_##T(a, b), r = acc_rem_##T(a, b);                                           \
        return (r != 0 && ((r < (T)0) != (b < (T)0))) ? acc_sub_##T(q, (T)1) : q;                 \
    }                                                                                              \
    ACC_FN T acc_mod_##T(T a, T b) {                                                               \
        T r = acc_rem_##T(a, b);                                                                   \
        return (r != 0 && ((r < (T)0) != (b < (T)0))) ? acc_add_##T(r, b) : r;                     \
    }                                                                                              \
    ACC_FN T acc_shl_##T(T a, T s) { return (T)(U)((W)(U)a << ((unsigned)s & (BITS - 1))); }       \
    ACC_FN T acc_shr_##T(T a, T s) {                                                               \
        unsigned k = (unsigned)s & (BITS - 1);                                                     \
        /* an arithmetic shift for signed types, without shifting a negative value: a negative     \
           value's bits are flipped before and after a logical shift, by a mask of its sign (no    \
           branch: 10^4 shifts in a row were 10^4 branches, which the compiler's jump threading    \
           took minutes over) */                                                                   \
        U sign = IS_SIGNED ? (U)((U)0 - (U)((U)a >> (BITS - 1))) : (U)0;                           \
        return (T)(U)((U)((U)((U)a ^ sign) >> k) ^ sign);                                          \
    }                                                                                              \
    ACC_FN T acc_min_##T(T a, T b) { return a < b ? a : b; }                                       \
    ACC_FN T acc_max_##T(T a, T b) { return a > b ? a : b; }                                       \
    ACC_FN uint32_t acc_popcount_##T(T a) { return (uint32_t)ACC_POPCOUNT64((uint64_t)(U)a); }    \
    ACC_FN uint32_t acc_clz_##T(T a) {                                                             \
        return (U)a == 0 ? BITS : (uint32_t)(ACC_CLZ64((uint64_t)(U)a) - (64 - BITS));             \
    }                                                                                              \
    ACC_FN uint32_t acc_ctz_##T(T a) { return (U)a == 0 ? BITS : (uint32_t)ACC_CTZ64((uint64_t)(U)a); }

ACC_INT_OPS(int8_t, uint8_t, unsigned, 8, 1)
ACC_INT_OPS(int16_t, uint16_t, unsigned, 16, 1)
ACC_INT_OPS(int32_t, uint32_t, uint32_t, 32, 1)
ACC_INT_OPS(int64_t, uint64_t, uint64_t, 64, 1)
ACC_INT_OPS(uint8_t, uint8_t, unsigned, 8, 0)
ACC_INT_OPS(uint16_t, uint16_t, unsigned, 16, 0)
ACC_INT_OPS(uint32_t, uint32_t, uint32_t, 32, 0)
ACC_INT_OPS(uint64_t, uint64_t, uint64_t, 64, 0)

/* ---- floats ------------------------------------------------------------ */

/* fmin and fmax as Rust's f32::min/max and x86-64's libm compute them:
 * the other operand when one is NaN, and of two equal operands (-0.0 and
 * +0.0) the first; written as a comparison and a select so that the
 * compiler inlines and vectorises them (a call to libm's fmax kept a
 * fold's loop scalar, at a seventh of the speed). The select of the
 * ordered comparison comes first, as x86-64's minss and maxss compute
 * it, and the NaN case after: scalar code (a histogram's update) then
 * has no branch, where one select of both conditions compiled to two. */
#define ACC_FLOAT_MINMAX(T)                                                                         \
    ACC_FN T acc_fmin_##T(T a, T b) {                                                               \
        T m = b < a ? b : a;                                                                        \
        return a != a ? b : m;                                                                      \
    }                                                                                               \
    ACC_FN T acc_fmax_##T(T a, T b) {                                                               \
        T m = b > a ? b : a;                                                                        \
        return a != a ? b : m;                                                                      \
    }
ACC_FLOAT_MINMAX(float)
ACC_FLOAT_MINMAX(double)

/* Negation and absolute value change the sign bit alone, of a NaN too
 * (Rust's `-x` and `abs`, IEEE 754's negate and abs): PTX's neg.f32 and
 * abs.f32 give an unspecified NaN for a NaN (an H100 gives the canonical
 * one, losing the sign and payload), so both are written on the bits; on
 * the host they compile to the same xor and and. */
ACC_FN float acc_fneg_float(float a) { return acc_f32_bits(acc_f32_to_bits(a) ^ 0x80000000u); }
ACC_FN float acc_fabs_float(float a) { return acc_f32_bits(acc_f32_to_bits(a) & 0x7fffffffu); }
ACC_FN double acc_fneg_double(double a) { return acc_f64_bits(acc_f64_to_bits(a) ^ 0x8000000000000000ull); }
ACC_FN double acc_fabs_double(double a) { return acc_f64_bits(acc_f64_to_bits(a) & 0x7fffffffffffffffull); }

/* Rust's powi (compiler-rt's __powisf2/__powidf2): repeated squaring. */
ACC_FN float acc_powi_float(float a, int32_t b) {
    uint32_t p = b < 0 ? 0u - (uint32_t)b : (uint32_t)b;
    float r = 1.0f;
    for (;;) {
        if (p & 1u) r *= a;
        p >>= 1;
        if (p == 0) break;
        a *= a;
    }
    return b < 0 ? 1.0f / r : r;
}
ACC_FN double acc_powi_double(double a, int32_t b) {
    uint32_t p = b < 0 ? 0u - (uint32_t)b : (uint32_t)b;
    double r = 1.0;
    for (;;) {
        if (p & 1u) r *= a;
        p >>= 1;
        if (p == 0) break;
        a *= a;
    }
    return b < 0 ? 1.0 / r : r;
}
ACC_FN float acc_signum_float(float x) { return isnan(x) ? x : copysignf(1.0f, x); }
ACC_FN double acc_signum_double(double x) { return isnan(x) ? x : copysign(1.0, x); }

/* Is x a NaN? In fast-math mode (ACC_FAST_MATH, Note [Fast math] in
 * cpu/compile.rs) `isnan` may be folded to false, so the bits decide. */
#ifdef ACC_FAST_MATH
ACC_FN int acc_isnan_double(double x) { return (acc_f64_to_bits(x) << 1) > (0x7ff0000000000000ull << 1); }
ACC_FN int acc_isnan_float(float x) { return acc_isnan_double((double)x); }
#else
ACC_FN int acc_isnan_double(double x) { return isnan(x); }
ACC_FN int acc_isnan_float(float x) { return isnan(x); }
#endif

/* Whether the ranges the generator found by following float arithmetic
 * hold (Note [Value ranges], backend/c/exp/ranges.rs): not under
 * fast-math, where the C compiler may regroup that arithmetic. */
#ifdef ACC_FAST_MATH
#define ACC_FLOAT_RANGES 0
#else
#define ACC_FLOAT_RANGES 1
#endif

/* Float to integer, saturating, NaN to 0 (Rust's `as`). LO and HI are the
 * integer type's range as doubles: LO is exact, HI is 2^BITS(-1), the
 * first value above the range. The `_in` form is for a value the
 * generator knows to lie strictly between LO - 1 and HI, where both
 * convert alike: a plain conversion. The `_in32` form is for one known to
 * lie strictly between -2^31 - 1 and 2^31: converted through `int32_t`,
 * which vectorises where the wider conversion does not (Note [Narrow
 * conversions] in backend/c/exp.rs). */
#define ACC_SAT(F, T, LO, HI, TMIN, TMAX)                                                         \
    ACC_FN T acc_##F##_to_##T(F x) {                                                               \
        if (acc_isnan_##F(x)) return 0;                                                             \
        if ((double)x <= (LO)) return TMIN;                                                         \
        if ((double)x >= (HI)) return TMAX;                                                         \
        return (T)x;                                                                                \
    }                                                                                              \
    ACC_FN T acc_##F##_to_##T##_in(F x) { return ACC_FLOAT_RANGES ? (T)x : acc_##F##_to_##T(x); }   \
    ACC_FN T acc_##F##_to_##T##_in32(F x) { return ACC_FLOAT_RANGES ? (T)(int32_t)x : acc_##F##_to_##T(x); }
#define ACC_SAT_ALL(F)                                                                             \
    ACC_SAT(F, int8_t, -128.0, 128.0, INT8_MIN, INT8_MAX)                                           \
    ACC_SAT(F, int16_t, -32768.0, 32768.0, INT16_MIN, INT16_MAX)                                    \
    ACC_SAT(F, int32_t, -2147483648.0, 2147483648.0, INT32_MIN, INT32_MAX)                          \
    ACC_SAT(F, int64_t, -9223372036854775808.0, 9223372036854775808.0, INT64_MIN, INT64_MAX)        \
    ACC_SAT(F, uint8_t, 0.0, 256.0, 0, UINT8_MAX)                                                   \
    ACC_SAT(F, uint16_t, 0.0, 65536.0, 0, UINT16_MAX)                                               \
    ACC_SAT(F, uint32_t, 0.0, 4294967296.0, 0, UINT32_MAX)                                          \
    ACC_SAT(F, uint64_t, 0.0, 18446744073709551616.0, 0, UINT64_MAX)
ACC_SAT_ALL(float)
ACC_SAT_ALL(double)

/* ---- binary16 ---------------------------------------------------------- */

ACC_FN float acc_f16_to_float(acc_f16 h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = man == 0 ? (sign | 0x7f800000u) : (sign | 0x7fc00000u | (man << 13)); /* NaN made quiet, as half does */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do { e++; man <<= 1; } while ((man & 0x400u) == 0);
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    return acc_f32_bits(bits);
}

/* Rounds a double to the nearest binary16, ties to even (half's
 * f16::from_f64). */
ACC_FN acc_f16 acc_double_to_f16(double x) {
    uint64_t b = acc_f64_to_bits(x);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000u);
    uint64_t exp = (b >> 52) & 0x7ff, man = b & 0xfffffffffffffull;
    if (exp == 0x7ff) /* infinity, or NaN kept quiet with its top payload bits */
        return man == 0 ? (uint16_t)(sign | 0x7c00u) : (uint16_t)(sign | 0x7e00u | (uint16_t)(man >> 42));
    int64_t e = (int64_t)exp - 1023 + 15;
    if (e >= 0x1f)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        /* subnormal or zero: the significand with its implicit bit, shifted */
        if (e < -10)
            return sign;
        uint64_t m = man | 0x10000000000000ull;
        int shift = (int)(43 - e); /* 52 - 10 + 1 - e */
        uint64_t q = m >> shift, rest = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
        if (rest > half || (rest == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | (uint16_t)q);
    }
    uint64_t q = man >> 42, rest = man & ((1ull << 42) - 1), half = 1ull << 41;
    uint32_t h = (uint32_t)(e << 10) | (uint32_t)q;
    if (rest > half || (rest == half && (q & 1u)))
        h++; /* may carry into the exponent, up to infinity: still right */
    return (uint16_t)(sign | h);
}
ACC_FN acc_f16 acc_float_to_f16(float x) { return acc_double_to_f16((double)x); }
