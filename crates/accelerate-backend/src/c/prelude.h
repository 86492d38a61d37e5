/* accelerate-rs: the prelude of every generated C file.
 *
 * The helpers, and the rules of docs/semantics.md they keep without
 * undefined behaviour, are in prelude_common.h, which the CUDA prelude
 * shares; this file defines what that text needs from the host C
 * compiler (GCC or Clang) and how a kernel's error reaches the host.
 */
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <sched.h>

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

#define ACC_FN static inline
/* A helper on an error's path: out of line, so that a kernel of 10^4
 * checks does not paste 10^4 copies of it into its code. */
#define ACC_COLD static __attribute__((noinline, cold))

/* Marks a reduction's lane loop outside a fast function: under GCC it
 * stays a loop until the vectoriser, which then vectorises it as a loop
 * instead of as one group of 16 statements, whose masked loads GCC 12
 * gives the wrong masks (Note [Masked loads in lane loops],
 * backend/cpu/fold.rs). Other compilers are left alone: for Clang,
 * `unroll 1` would also keep the vectorised loop from being unrolled. */
#if defined(__GNUC__) && !defined(__clang__)
#define ACC_LANE_LOOP _Pragma("GCC unroll 1")
#else
#define ACC_LANE_LOOP
#endif

/* Compiles a kernel function whose lanes wait on the latency of their
 * operations for 256-bit vectors where the kernels are compiled for
 * 512-bit ones (Note [Latency-bound lanes], backend/cpu/kernel.rs). GCC's
 * `target` attribute takes the vector width; Clang's does not, and Clang
 * is left alone. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
#define ACC_LATENCY_BOUND __attribute__((target("prefer-vector-width=256")))
#else
#define ACC_LATENCY_BOUND
#endif

/* Keeps a float accumulator in a register the compiler must assume
 * changed: a fold in order over a short range then stays a scalar loop.
 * GCC otherwise vectorises such a loop, in-order adds and all, with
 * gathers for the reads of a sparse row; on the EPYC of docs/benchmarks.md
 * that took a sparse product's rows of 5 to 12 elements from 0.19 to
 * 0.25 ms (Note [Short ranges in order], backend/cpu/fold.rs). */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define ACC_SCALAR_FLOAT(x) __asm__("" : "+v"(x))
#elif defined(__GNUC__) && defined(__aarch64__)
#define ACC_SCALAR_FLOAT(x) __asm__("" : "+w"(x))
#else
#define ACC_SCALAR_FLOAT(x) ((void)0)
#endif

/* Waits until a flag another worker sets is set (the chained scan of
 * backend/cpu/scan.rs, Note [Chained scans]): a pause between reads, as
 * spinning loops do, and after a thousand of them the processor given
 * up, so that a worker waiting on one the system has descheduled does not
 * keep it from running. The acquire load makes what the other worker
 * wrote before setting the flag visible after it. */
static inline void acc_wait_flag(const int32_t *flag) {
    for (int spins = 0; !__atomic_load_n(flag, __ATOMIC_ACQUIRE); spins++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (spins >= 1000) {
            sched_yield();
            spins = 0;
        }
    }
}

/* The lanes of two vectors of type M picked by constant indices (the
 * first vector's lanes, then the second's): for the vector scans of
 * backend/cpu/scan.rs (Note [Vector scans]). Clang and GCC 12 have
 * `__builtin_shufflevector`; older GCC has `__builtin_shuffle`, whose
 * indices are a vector of the same shape. */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
#define ACC_SHUFFLE2(M, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define ACC_SHUFFLE2(M, a, b, ...) __builtin_shuffle(a, b, (M){__VA_ARGS__})
#endif

/* Bit casts (memcpy: the defined way in C) and 64-bit bit counts (of a
 * nonzero operand for CLZ and CTZ). */
static inline float acc_f32_bits(uint32_t b) { float x; memcpy(&x, &b, 4); return x; }
static inline double acc_f64_bits(uint64_t b) { double x; memcpy(&x, &b, 8); return x; }
static inline uint32_t acc_f32_to_bits(float x) { uint32_t b; memcpy(&b, &x, 4); return b; }
static inline uint64_t acc_f64_to_bits(double x) { uint64_t b; memcpy(&b, &x, 8); return b; }
#define ACC_POPCOUNT64(x) __builtin_popcountll(x)
#define ACC_CLZ64(x) __builtin_clzll(x)
#define ACC_CTZ64(x) __builtin_ctzll(x)

#include "prelude_common.h"

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
