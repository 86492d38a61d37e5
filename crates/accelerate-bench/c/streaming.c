/* Hand-written C baselines of the streaming benchmarks: dot product,
 * saxpy and the STREAM triad, parallelised with OpenMP.
 *
 * They are what a performance engineer would write in C to find this
 * machine's practical limit for these loops, compiled by build.rs with
 * -O3 -march=native -fopenmp (see the flags there). Every loop is a
 * `schedule(static)` split of the index space over the threads, one
 * contiguous piece each, so that every thread streams its own range.
 * No -ffast-math here: the only reassociation is the dot product's,
 * asked for explicitly with independent accumulators. GCC's default
 * -ffp-contract=fast (GNU C) may turn `a * x + y` into a fused
 * multiply-add; the Rust side's checks allow for that.
 */

#include <stddef.h>

/* Accumulators per thread in the dot product: 64 floats are four 16-wide
 * AVX-512 registers (eight AVX2 ones), enough independent sums to hide
 * the latency of the vector add, which a single running sum would expose. */
#define DOT_LANES 64

float bench_dotp_omp(const float *restrict x, const float *restrict y, long n) {
    long blocks = n / DOT_LANES;
    float total = 0.0f;
#pragma omp parallel reduction(+ : total)
    {
        float acc[DOT_LANES] = {0};
#pragma omp for schedule(static) nowait
        for (long b = 0; b < blocks; b++) {
            const float *xb = x + b * DOT_LANES;
            const float *yb = y + b * DOT_LANES;
#pragma omp simd
            for (int k = 0; k < DOT_LANES; k++) acc[k] += xb[k] * yb[k];
        }
        float s = 0.0f;
        for (int k = 0; k < DOT_LANES; k++) s += acc[k];
        total += s;
    }
    for (long i = blocks * DOT_LANES; i < n; i++) total += x[i] * y[i];
    return total;
}

/* out = a * x + y, into a separate output as the Accelerate program does
 * (its inputs are immutable), so every run computes the same thing. */
void bench_saxpy_omp(float a, const float *restrict x, const float *restrict y, float *restrict out, long n) {
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) out[i] = a * x[i] + y[i];
}

/* The STREAM triad, a[i] = b[i] + s * c[i], in double precision as in
 * McCalpin's STREAM; with arrays far larger than the last-level cache it
 * measures the memory bandwidth the other programs are compared with. */
void bench_triad_omp(double *restrict a, const double *restrict b, const double *restrict c, double s, long n) {
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}
