/* accelerate-rs: the CUDA C emulator's header, put before a generated
 * CUDA C file (prelude included) so that the host's C++ compiler builds
 * it into a shared object whose kernels run on the host
 * (Note [The CUDA emulator] in backend/cuda/emulate.rs).
 *
 * It gives the file what NVRTC would: the CUDA qualifiers (no-ops here,
 * `__shared__` a static variable, which all the threads of the one block
 * running at a time share), the thread coordinates, and the intrinsics
 * the generated code uses, each with the semantics the CUDA programming
 * guide gives it. Synchronisation (`__syncthreads`, and the warp
 * shuffles, which exchange values through a per-block array between two
 * warp barriers) is a barrier among the block's threads, which are
 * fibers (emulate_tail.h). The header includes only C headers that do not
 * define the fixed-width integer types, which the CUDA prelude defines
 * itself (as NVRTC has no standard headers).
 */

/* The system headers' 64-bit integer types are `long`, the prelude's
 * `long long` (as NVRTC's): the system's are renamed while they are read. */
#define int64_t acc_emu_system_int64_t
#define uint64_t acc_emu_system_uint64_t
#include <math.h>
#include <string.h>
#undef int64_t
#undef uint64_t

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __shared__ static

struct acc_emu_dim3 {
    unsigned x, y, z;
};

/* The running thread's coordinates, set by the scheduler whenever it
 * switches to a thread. One launch runs at a time in a process (the
 * memory manager's lock is held across it). */
static acc_emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

/* Barriers: the block's, and each warp's (defined in emulate_tail.h). */
static void acc_emu_sync_block();
static void acc_emu_sync_warp();
/* The words the lanes of a warp exchange in a shuffle, by thread. */
static unsigned long long acc_emu_lanes[1024];

static inline void __syncthreads() { acc_emu_sync_block(); }
static inline void __syncwarp(unsigned = 0xffffffffu) { acc_emu_sync_warp(); }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* Shuffles: every lane publishes its value, the warp waits for all, each
 * reads its source lane's (its own where the source is outside the
 * warp), and the warp waits again before the words are reused. */
template <class T> static T acc_emu_shfl(T v, int src_lane) {
    const unsigned t = threadIdx.x, base = t & ~31u;
    unsigned long long w = 0;
    memcpy(&w, &v, sizeof(T));
    acc_emu_lanes[t] = w;
    acc_emu_sync_warp();
    T r = v;
    if (src_lane >= 0 && src_lane < 32)
        memcpy(&r, &acc_emu_lanes[base + (unsigned)src_lane], sizeof(T));
    acc_emu_sync_warp();
    return r;
}
template <class T> static T __shfl_down_sync(unsigned, T v, int d) {
    return acc_emu_shfl(v, (int)(threadIdx.x & 31u) + d);
}
template <class T> static T __shfl_up_sync(unsigned, T v, int d) {
    return acc_emu_shfl(v, (int)(threadIdx.x & 31u) - d);
}
template <class T> static T __shfl_sync(unsigned, T v, int lane) { return acc_emu_shfl(v, lane); }

/* Atomics, with CUDA's overloads (the emulated threads of a launch run
 * on one host thread, so these need not be atomic; they are, as cheaply,
 * to say what is meant). */
#define ACC_EMU_CAS(T)                                                                             \
    static inline T atomicCAS(T *p, T compare, T val) {                                            \
        __atomic_compare_exchange_n(p, &compare, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);  \
        return compare;                                                                            \
    }                                                                                              \
    static inline T atomicExch(T *p, T val) { return __atomic_exchange_n(p, val, __ATOMIC_SEQ_CST); }
ACC_EMU_CAS(int)
ACC_EMU_CAS(unsigned)
ACC_EMU_CAS(unsigned long long)
ACC_EMU_CAS(unsigned short)
#define ACC_EMU_ARITH(T)                                                                           \
    static inline T atomicAdd(T *p, T val) {                                                       \
        T old = *p;                                                                                \
        *p = old + val;                                                                            \
        return old;                                                                                \
    }                                                                                              \
    static inline T atomicMin(T *p, T val) {                                                       \
        T old = *p;                                                                                \
        *p = val < old ? val : old;                                                                \
        return old;                                                                                \
    }                                                                                              \
    static inline T atomicMax(T *p, T val) {                                                       \
        T old = *p;                                                                                \
        *p = val > old ? val : old;                                                                \
        return old;                                                                                \
    }
ACC_EMU_ARITH(int)
ACC_EMU_ARITH(unsigned)
ACC_EMU_ARITH(long long)
ACC_EMU_ARITH(unsigned long long)
static inline float atomicAdd(float *p, float val) {
    float old = *p;
    *p = old + val;
    return old;
}
static inline double atomicAdd(double *p, double val) {
    double old = *p;
    *p = old + val;
    return old;
}

/* Bit casts and bit counts. */
static inline float __uint_as_float(unsigned u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}
static inline double __longlong_as_double(long long u) {
    double f;
    memcpy(&f, &u, 8);
    return f;
}
static inline long long __double_as_longlong(double f) {
    long long u;
    memcpy(&u, &f, 8);
    return u;
}
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
