/* Black-Scholes option pricing in C with OpenMP: the hand-written
 * baseline of the Black-Scholes benchmark, the same formula as the
 * Accelerate program (ICFP'13, Figure 1) and the Rust reference.
 *
 * Built by build.rs with -O3 -march=native -fopenmp -ffast-math, and
 * linked with -lmvec -lm. Why -ffast-math, for this file only: glibc
 * declares the vector variants of expf and logf (libmvec's
 * _ZGVeN16v_expf and friends) only under __FAST_MATH__ (see
 * <bits/math-vector.h>), and only those let `#pragma omp simd` turn the
 * loop body into 16-wide AVX-512 code; scalar expf/logf calls would keep
 * the loop scalar. -ffast-math also lets GCC reassociate and ignore NaN
 * and infinities, which the inputs (positive prices, strikes and
 * times) never produce. The results stay within the benchmark's
 * tolerance of the Rust reference (checked before every timing).
 * The Accelerate backend does not use -ffast-math (its results must
 * follow the language's float rules), so this baseline is an upper
 * bound, not a like-for-like comparison.
 */

#include <math.h>

#define RISKFREE 0.02f
#define VOLATILITY 0.30f
#define RSQRT2PI 0.39894228040143267793994605993438f

/* Abramowitz and Stegun 26.2.17, evaluated as in the paper's `horner`. */
static inline float cnd(float d) {
    const float c0 = 0.31938153f, c1 = -0.356563782f, c2 = 1.781477937f, c3 = -1.821255978f,
                c4 = 1.330274429f;
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float poly = k * (c0 + k * (c1 + k * (c2 + k * (c3 + k * c4))));
    float c = RSQRT2PI * expf(-0.5f * d * d) * poly;
    return d > 0.0f ? 1.0f - c : c;
}

void bench_blackscholes_omp(const float *restrict price, const float *restrict strike,
                            const float *restrict years, float *restrict call, float *restrict put,
                            long n) {
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) {
        float s = price[i], x = strike[i], t = years[i];
        float v_sqrt_t = VOLATILITY * sqrtf(t);
        float d1 = (logf(s / x) + (RISKFREE + 0.5f * VOLATILITY * VOLATILITY) * t) / v_sqrt_t;
        float d2 = d1 - v_sqrt_t;
        float cnd_d1 = cnd(d1);
        float cnd_d2 = cnd(d2);
        float x_exp_rt = x * expf(-RISKFREE * t);
        call[i] = s * cnd_d1 - x_exp_rt * cnd_d2;
        put[i] = x_exp_rt * (1.0f - cnd_d2) - s * (1.0f - cnd_d1);
    }
}
