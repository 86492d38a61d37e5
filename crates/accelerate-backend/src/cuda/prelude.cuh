/* accelerate-rs: the prelude of every generated CUDA C file.
 *
 * The device twin of backend/c/prelude.h (Note [The CUDA prelude] in
 * backend/cuda/mod.rs): the helpers of prelude_common.h, with the same
 * rules (docs/semantics.md; no input has undefined behaviour), written
 * for NVRTC, which has no standard headers: the fixed-width integer types
 * and their limits are defined here, every helper is a __device__
 * function, the bit casts and bit counts use the CUDA intrinsics, and a
 * kernel's error reaches the host through an acc_err in device memory
 * claimed with atomicCAS. Warp shuffles and the bit views of permute's
 * atomics are the device's own.
 */

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned long long acc_uptr;

#define INT8_MIN (-128)
#define INT8_MAX 127
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295u
#define UINT64_MAX 18446744073709551615ull

#define ACC_FN static __device__ __forceinline__
#define ACC_COLD ACC_FN

/* Threads per block of every kernel (the host launches exactly this many)
 * and warps per block. */
#define ACC_BLOCK 256
#define ACC_WARPS (ACC_BLOCK / 32)
#define ACC_FULL_MASK 0xffffffffu

/* The shared scalar code generator checks shape sizes with GCC's
 * __builtin_mul_overflow, which NVRTC does not know: this is the same
 * test for the one use it has (int64_t operands and result). */
ACC_FN bool acc_mul_overflow_int64(int64_t a, int64_t b, int64_t *r) {
    uint64_t lo = (uint64_t)a * (uint64_t)b;
    int64_t hi = __mul64hi(a, b);
    *r = (int64_t)lo;
    return hi != ((int64_t)lo < 0 ? -1 : 0);
}
#define __builtin_mul_overflow(a, b, r) acc_mul_overflow_int64((a), (b), (r))

/* Bit casts and 64-bit bit counts (of a nonzero operand for CLZ and CTZ),
 * with the CUDA intrinsics. */
ACC_FN float acc_f32_bits(uint32_t b) { return __uint_as_float(b); }
ACC_FN double acc_f64_bits(uint64_t b) { return __longlong_as_double((long long)b); }
ACC_FN uint32_t acc_f32_to_bits(float x) { return __float_as_uint(x); }
ACC_FN uint64_t acc_f64_to_bits(double x) { return (uint64_t)__double_as_longlong(x); }
#define ACC_POPCOUNT64(x) __popcll(x)
#define ACC_CLZ64(x) __clzll((long long)(x))
#define ACC_CTZ64(x) (__ffsll((long long)(x)) - 1)

#include "prelude_common.h"

/* A thread's error reaches the host: the first thread to claim the shared
 * record (code 0 -> -1) fills it, then publishes its code; the host reads
 * the record after the kernel has finished. */
ACC_FN void acc_publish(acc_err *shared, const acc_err *local) {
    if (local->code == ACC_ERR_NONE)
        return;
    if (atomicCAS(&shared->code, ACC_ERR_NONE, -1) == ACC_ERR_NONE) {
        shared->site = local->site;
        for (int k = 0; k < ACC_ERR_VALS; k++)
            shared->vals[k] = local->vals[k];
        __threadfence();
        atomicExch(&shared->code, local->code);
    }
}

ACC_FN int acc_failed(const acc_err *shared) {
    return *(volatile const int32_t *)&shared->code != ACC_ERR_NONE;
}

/* ---- warps ------------------------------------------------------------- */

/* Shuffles of every element type (types narrower than 32 bits travel
 * widened), for the warp-level reductions and scans. */
#define ACC_SHFL_NARROW(T, V)                                                                      \
    ACC_FN T acc_shfl_down(T v, int d) { return (T)__shfl_down_sync(ACC_FULL_MASK, (V)v, d); }    \
    ACC_FN T acc_shfl_up(T v, int d) { return (T)__shfl_up_sync(ACC_FULL_MASK, (V)v, d); }
#define ACC_SHFL(T)                                                                                \
    ACC_FN T acc_shfl_down(T v, int d) { return __shfl_down_sync(ACC_FULL_MASK, v, d); }          \
    ACC_FN T acc_shfl_up(T v, int d) { return __shfl_up_sync(ACC_FULL_MASK, v, d); }
ACC_SHFL_NARROW(int8_t, int)
ACC_SHFL_NARROW(int16_t, int)
ACC_SHFL_NARROW(uint8_t, unsigned)
ACC_SHFL_NARROW(uint16_t, unsigned)
ACC_SHFL(int32_t)
ACC_SHFL(uint32_t)
ACC_SHFL(int64_t)
ACC_SHFL(uint64_t)
ACC_SHFL(float)
ACC_SHFL(double)

/* ---- atomics ----------------------------------------------------------- */

/* A value as the unsigned word of its width, and back, so that permute's
 * compare-and-swap loops compare bits (a NaN equals itself). */
#define ACC_BITS(S, T, W, TO, FROM)                                                                \
    ACC_FN W acc_bits_##S(T x) { return TO; }                                                      \
    ACC_FN T acc_from_bits_##S(W w) { return FROM; }
ACC_BITS(int8_t, int8_t, uint8_t, (uint8_t)x, (int8_t)w)
ACC_BITS(int16_t, int16_t, uint16_t, (uint16_t)x, (int16_t)w)
ACC_BITS(int32_t, int32_t, uint32_t, (uint32_t)x, (int32_t)w)
ACC_BITS(int64_t, int64_t, uint64_t, (uint64_t)x, (int64_t)w)
ACC_BITS(uint8_t, uint8_t, uint8_t, x, w)
ACC_BITS(uint16_t, uint16_t, uint16_t, x, w)
ACC_BITS(uint32_t, uint32_t, uint32_t, x, w)
ACC_BITS(uint64_t, uint64_t, uint64_t, x, w)
ACC_BITS(float, float, uint32_t, __float_as_uint(x), __uint_as_float(w))
ACC_BITS(double, double, uint64_t, (uint64_t)__double_as_longlong(x), __longlong_as_double((long long)w))
ACC_BITS(acc_bool, acc_bool, uint8_t, x, w)
ACC_BITS(acc_f16, acc_f16, uint16_t, x, w)
