/* accelerate-rs: the prelude of every generated C file.
 *
 * The rules these helpers implement are those of docs/semantics.md, and
 * every one is written so that no input has undefined behaviour:
 * - integer arithmetic wraps: it is done in the unsigned type of the same
 *   width (at least `unsigned int`, so that narrow types are not promoted
 *   to a signed `int` that could overflow) and converted back, which GCC
 *   and Clang define as reduction modulo 2^N;
 * - shift amounts are taken modulo the bit width (Rust's wrapping_shl);
 * - division and remainder by zero are checked by the caller before the
 *   helper is called; MIN / -1 wraps to MIN and MIN % -1 is 0;
 * - float to integer conversions saturate, NaN giving 0 (Rust's `as`);
 * - binary16 values are carried as their bits (uint16_t); arithmetic widens
 *   them to float and rounds the result back once.
 */
#include <stdint.h>
#include <string.h>
#include <math.h>

/* Vector variants of the transcendental functions (glibc's libmvec), so
 * that a loop calling them vectorises: each is declared an OpenMP
 * `declare simd` function, which the compiler honours under -fopenmp-simd
 * (no other OpenMP feature, no runtime) by calling `_ZGV..._expf` on whole
 * vectors. glibc's math.h declares them so only under -ffast-math, which
 * we cannot use (it drops the NaN and infinity rules); declaring them here
 * keeps those rules: the vector functions return what the scalar ones do
 * for NaN, infinities and out-of-range arguments, and differ from them by
 * at most 4 ulp elsewhere (docs/semantics.md allows backends to differ in
 * the last bits of the transcendental functions). The backend defines
 * ACC_LIBMVEC, and links libmvec, only where the compiler finds it. */
#ifdef ACC_LIBMVEC
#define ACC_SIMD_1(name) _Pragma("omp declare simd notinbranch") float name##f(float); \
    _Pragma("omp declare simd notinbranch") double name(double);
#define ACC_SIMD_2(name) _Pragma("omp declare simd notinbranch") float name##f(float, float); \
    _Pragma("omp declare simd notinbranch") double name(double, double);
ACC_SIMD_1(exp) ACC_SIMD_1(log) ACC_SIMD_1(sin) ACC_SIMD_1(cos) ACC_SIMD_1(tan)
ACC_SIMD_1(asin) ACC_SIMD_1(acos) ACC_SIMD_1(atan) ACC_SIMD_1(sinh) ACC_SIMD_1(cosh)
ACC_SIMD_1(tanh) ACC_SIMD_2(atan2) ACC_SIMD_2(pow)
#endif

typedef uint8_t acc_bool;
typedef uint16_t acc_f16;

/* An error a kernel raises: the first one a kernel reports is kept; the
 * host turns it into accelerate::Error, naming the user's source line
 * (`site` indexes the kernel's table of source locations). */
enum {
    ACC_ERR_NONE = 0,
    ACC_ERR_DIVISION_BY_ZERO = 1,
    ACC_ERR_INDEX_OUT_OF_BOUNDS = 2,        /* vals: rank, index..., shape... */
    ACC_ERR_LINEAR_INDEX_OUT_OF_BOUNDS = 3, /* vals: index, size, rank, shape... */
    ACC_ERR_RESHAPE = 4                     /* vals: from rank, from..., to rank, to... */
};
#define ACC_ERR_VALS 64
typedef struct {
    int32_t code;
    int32_t site;
    int64_t vals[ACC_ERR_VALS];
} acc_err;

/* The arguments of every kernel: the buffers it reads and writes (one per
 * primitive leaf of each array), their extents, the skeleton's integer
 * parameters, the kernel's hoisted literals as 64-bit words, and where to
 * report an error. */
typedef struct {
    void *const *bufs;
    const int64_t *extents;
    const int64_t *params;
    const int64_t *consts;
    acc_err *err;
} acc_args;

static void acc_raise(acc_err *e, int32_t code, int32_t site, int n, const int64_t *vals) {
    if (e->code != ACC_ERR_NONE)
        return;
    e->code = code;
    e->site = site;
    for (int k = 0; k < n && k < ACC_ERR_VALS; k++)
        e->vals[k] = vals[k];
}

/* Hands an error on to an enclosing context (a deferred error reaching a
 * use of its variable, or a kernel's error reaching the host). */
static void acc_propagate(acc_err *to, const acc_err *from) {
    if (to->code == ACC_ERR_NONE && from->code != ACC_ERR_NONE)
        *to = *from;
}

/* A kernel's error reaches the host: the first of the parallel workers
 * to report one wins. */
static void acc_publish(acc_err *shared, const acc_err *local) {
    int32_t none = ACC_ERR_NONE, busy = -1;
    if (local->code == ACC_ERR_NONE)
        return;
    if (__atomic_compare_exchange_n(&shared->code, &none, busy, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        shared->site = local->site;
        memcpy(shared->vals, local->vals, sizeof shared->vals);
        __atomic_store_n(&shared->code, local->code, __ATOMIC_RELEASE);
    }
}

static inline int acc_failed(const acc_err *shared) {
    return __atomic_load_n(&shared->code, __ATOMIC_RELAXED) != ACC_ERR_NONE;
}

/* ---- integers ---------------------------------------------------------- */

#define ACC_INT_OPS(T, U, W, BITS, IS_SIGNED)                                                  \
    static inline T acc_add_##T(T a, T b) { return (T)(U)((W)(U)a + (W)(U)b); }                     \
    static inline T acc_sub_##T(T a, T b) { return (T)(U)((W)(U)a - (W)(U)b); }                     \
    static inline T acc_mul_##T(T a, T b) { return (T)(U)((W)(U)a * (W)(U)b); }                     \
    static inline T acc_neg_##T(T a) { return (T)(U)((W)0 - (W)(U)a); }                              \
    static inline T acc_abs_##T(T a) { return (IS_SIGNED && a < (T)0) ? acc_neg_##T(a) : a; }      \
    static inline T acc_signum_##T(T a) { return (T)((a > (T)0) - (IS_SIGNED && a < (T)0)); }      \
    /* the divisor is not zero */                                                                  \
    static inline T acc_quot_##T(T a, T b) {                                                       \
        return (IS_SIGNED && b == (T)-1) ? acc_neg_##T(a) : (T)(a / b);                            \
    }                                                                                              \
    static inline T acc_rem_##T(T a, T b) { return (IS_SIGNED && b == (T)-1) ? (T)0 : (T)(a % b); } \
    static inline T acc_idiv_##T(T a, T b) {                                                       \
        T q = acc_quot_##T(a, b), r = acc_rem_##T(a, b);                                           \
        return (r != 0 && ((r < (T)0) != (b < (T)0))) ? acc_sub_##T(q, (T)1) : q;                 \
    }                                                                                              \
    static inline T acc_mod_##T(T a, T b) {                                                        \
        T r = acc_rem_##T(a, b);                                                                   \
        return (r != 0 && ((r < (T)0) != (b < (T)0))) ? acc_add_##T(r, b) : r;                     \
    }                                                                                              \
    static inline T acc_shl_##T(T a, T s) { return (T)(U)((W)(U)a << ((unsigned)s & (BITS - 1))); } \
    static inline T acc_shr_##T(T a, T s) {                                                        \
        unsigned k = (unsigned)s & (BITS - 1);                                                     \
        /* an arithmetic shift for signed types, without shifting a negative value */              \
        if (IS_SIGNED && a < (T)0)                                                                 \
            return (T)~(U)((U)~(U)a >> k);                                                         \
        return (T)((U)a >> k);                                                                     \
    }                                                                                              \
    static inline T acc_min_##T(T a, T b) { return a < b ? a : b; }                                \
    static inline T acc_max_##T(T a, T b) { return a > b ? a : b; }                                \
    static inline uint32_t acc_popcount_##T(T a) { return (uint32_t)__builtin_popcountll((U)a); }  \
    static inline uint32_t acc_clz_##T(T a) {                                                      \
        return (U)a == 0 ? BITS : (uint32_t)(__builtin_clzll((U)a) - (64 - BITS));                 \
    }                                                                                              \
    static inline uint32_t acc_ctz_##T(T a) { return (U)a == 0 ? BITS : (uint32_t)__builtin_ctzll((U)a); }

ACC_INT_OPS(int8_t, uint8_t, unsigned, 8, 1)
ACC_INT_OPS(int16_t, uint16_t, unsigned, 16, 1)
ACC_INT_OPS(int32_t, uint32_t, uint32_t, 32, 1)
ACC_INT_OPS(int64_t, uint64_t, uint64_t, 64, 1)
ACC_INT_OPS(uint8_t, uint8_t, unsigned, 8, 0)
ACC_INT_OPS(uint16_t, uint16_t, unsigned, 16, 0)
ACC_INT_OPS(uint32_t, uint32_t, uint32_t, 32, 0)
ACC_INT_OPS(uint64_t, uint64_t, uint64_t, 64, 0)

/* ---- floats ------------------------------------------------------------ */

static inline float acc_f32_bits(uint32_t b) { float x; memcpy(&x, &b, 4); return x; }
static inline double acc_f64_bits(uint64_t b) { double x; memcpy(&x, &b, 8); return x; }

/* Rust's powi (compiler-rt's __powisf2/__powidf2): repeated squaring. */
static inline float acc_powi_float(float a, int32_t b) {
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
static inline double acc_powi_double(double a, int32_t b) {
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
static inline float acc_signum_float(float x) { return isnan(x) ? x : copysignf(1.0f, x); }
static inline double acc_signum_double(double x) { return isnan(x) ? x : copysign(1.0, x); }

/* Float to integer, saturating, NaN to 0 (Rust's `as`). LO and HI are the
 * integer type's range as doubles: LO is exact, HI is 2^BITS(-1), the
 * first value above the range. */
#define ACC_SAT(F, T, LO, HI, TMIN, TMAX)                                                         \
    static inline T acc_##F##_to_##T(F x) {                                                        \
        if (isnan(x)) return 0;                                                                     \
        if ((double)x <= (LO)) return TMIN;                                                         \
        if ((double)x >= (HI)) return TMAX;                                                         \
        return (T)x;                                                                                \
    }
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

static inline float acc_f16_to_float(acc_f16 h) {
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
static inline acc_f16 acc_double_to_f16(double x) {
    uint64_t b;
    memcpy(&b, &x, 8);
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
static inline acc_f16 acc_float_to_f16(float x) { return acc_double_to_f16((double)x); }
