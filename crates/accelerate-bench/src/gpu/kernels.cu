/* accelerate-bench: the hand-written CUDA baselines of the GPU benchmarks,
 * written as a CUDA engineer would for one type and one operator each
 * (compiled by NVRTC for the device's architecture, with --fmad=false as
 * the library's kernels, so that both round alike). Launched with 256
 * threads a block; grid sizes are the host's (src/gpu/mod.rs).
 */

#define BLOCK 256
#define WARPS (BLOCK / 32)

/* saxpy: y = a x + y, a grid-stride loop over float4 (the vectors are
 * 256-byte aligned by the allocator and n is a multiple of 4 here). */
extern "C" __global__ void saxpy4(float a, const float4 *__restrict__ x, float4 *__restrict__ y, long long n4) {
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n4; i += (long long)gridDim.x * BLOCK) {
        float4 u = x[i], v = y[i];
        v.x = a * u.x + v.x;
        v.y = a * u.y + v.y;
        v.z = a * u.z + v.z;
        v.w = a * u.w + v.w;
        y[i] = v;
    }
}

/* A block's sum of one value per thread, in thread 0. */
__device__ float block_sum(float v) {
    __shared__ float partial[WARPS];
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0)
        partial[threadIdx.x >> 5] = v;
    __syncthreads();
    v = threadIdx.x < WARPS ? partial[threadIdx.x] : 0.0f;
    if (threadIdx.x < 32)
        for (int off = 16; off > 0; off >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

/* dotp, pass 1: every block sums its grid-stride share of x*y (float4
 * loads) into partial[blockIdx.x]; pass 2 (one block) sums the partials. */
extern "C" __global__ void dotp_part(const float4 *__restrict__ x, const float4 *__restrict__ y, long long n4,
                                     float *__restrict__ partial) {
    float s = 0.0f;
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n4; i += (long long)gridDim.x * BLOCK) {
        float4 u = x[i], v = y[i];
        s += u.x * v.x + u.y * v.y + u.z * v.z + u.w * v.w;
    }
    s = block_sum(s);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = s;
}

extern "C" __global__ void dotp_final(const float *__restrict__ partial, int count, float *__restrict__ out) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < count; i += BLOCK)
        s += partial[i];
    s = block_sum(s);
    if (threadIdx.x == 0)
        *out = s;
}

/* Black-Scholes (the CUDA SDK's formulation): call and put prices of
 * options (price, strike, years) at riskfree rate r and volatility v. */
__device__ float cnd(float d) {
    const float A1 = 0.31938153f, A2 = -0.356563782f, A3 = 1.781477937f, A4 = -1.821255978f,
                A5 = 1.330274429f, RSQRT2PI = 0.39894228040143267793994605993438f;
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float c = RSQRT2PI * expf(-0.5f * d * d) * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))));
    return d > 0.0f ? 1.0f - c : c;
}

extern "C" __global__ void blackscholes(const float *__restrict__ s, const float *__restrict__ x,
                                        const float *__restrict__ t, float *__restrict__ call,
                                        float *__restrict__ put, float r, float v, long long n) {
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n; i += (long long)gridDim.x * BLOCK) {
        float S = s[i], X = x[i], T = t[i];
        float sqrtT = sqrtf(T);
        float d1 = (logf(S / X) + (r + 0.5f * v * v) * T) / (v * sqrtT);
        float d2 = d1 - v * sqrtT;
        float expRT = expf(-r * T);
        float c1 = cnd(d1), c2 = cnd(d2);
        call[i] = S * c1 - X * expRT * c2;
        put[i] = X * expRT * (1.0f - c2) - S * (1.0f - c1);
    }
}

/* One n-body step, all pairs, tiled through shared memory (the CUDA
 * SDK's and GPU Gems 3 ch. 31's scheme): each block stages BLOCK bodies
 * at a time, and every thread sums its body's acceleration from them,
 * then advances its velocity and position (semi-implicit Euler). Bodies
 * are (x, y, z, mass) and velocities (x, y, z, unused); eps2 softens close
 * encounters. `1.0f / sqrtf` as the benchmark's reference computes it
 * (correctly rounded, so every variant's interactions agree to the bit;
 * `rsqrtf` would be faster and differ). */
extern "C" __global__ void nbody_step(const float4 *__restrict__ body, const float4 *__restrict__ vel,
                                      float4 *__restrict__ body_out, float4 *__restrict__ vel_out, int n,
                                      float eps2, float dt) {
    __shared__ float4 tile[BLOCK];
    for (int base = blockIdx.x * BLOCK; base < n; base += gridDim.x * BLOCK) {
        int i = base + threadIdx.x;
        float4 me = i < n ? body[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        float ax = 0.0f, ay = 0.0f, az = 0.0f;
        for (int t = 0; t < n; t += BLOCK) {
            int j = t + threadIdx.x;
            tile[threadIdx.x] = j < n ? body[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            __syncthreads();
            int m = n - t < BLOCK ? n - t : BLOCK;
            for (int k = 0; k < m; k++) {
                float4 o = tile[k];
                float dx = o.x - me.x, dy = o.y - me.y, dz = o.z - me.z;
                float d2 = dx * dx + dy * dy + dz * dz + eps2;
                float inv = 1.0f / sqrtf(d2);
                float s = o.w * (inv * inv * inv);
                ax += dx * s;
                ay += dy * s;
                az += dz * s;
            }
            __syncthreads();
        }
        if (i < n) {
            float4 v = vel[i];
            v.x += ax * dt;
            v.y += ay * dt;
            v.z += az * dt;
            vel_out[i] = v;
            body_out[i] = make_float4(me.x + v.x * dt, me.y + v.y * dt, me.z + v.z * dt, me.w);
        }
    }
}

/* Inclusive scan (+) of n ints, in three passes over tiles of
 * BLOCK * ITEMS elements (reduce, then scan the tile totals in one block,
 * then scan each tile from its prefix): the textbook reduce-then-scan a
 * CUDA engineer writes without CUB. */
#define ITEMS 8
#define TILE (BLOCK * ITEMS)

__device__ int block_scan_inclusive(int v, int *total) {
    __shared__ int warp_sums[WARPS];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int off = 1; off < 32; off <<= 1) {
        int o = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off)
            v += o;
    }
    if (lane == 31)
        warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int w = lane < WARPS ? warp_sums[lane] : 0;
        for (int off = 1; off < 32; off <<= 1) {
            int o = __shfl_up_sync(0xffffffffu, w, off);
            if (lane >= off)
                w += o;
        }
        if (lane < WARPS)
            warp_sums[lane] = w;
    }
    __syncthreads();
    if (warp > 0)
        v += warp_sums[warp - 1];
    *total = warp_sums[WARPS - 1];
    __syncthreads();
    return v;
}

extern "C" __global__ void scan_reduce(const int *__restrict__ x, long long n, int *__restrict__ tile_sums) {
    long long base = (long long)blockIdx.x * TILE;
    int s = 0;
    for (int k = 0; k < ITEMS; k++) {
        long long i = base + k * BLOCK + threadIdx.x;
        if (i < n)
            s += x[i];
    }
    int total;
    block_scan_inclusive(s, &total);
    if (threadIdx.x == 0)
        tile_sums[blockIdx.x] = total;
}

extern "C" __global__ void scan_tiles(int *__restrict__ tile_sums, int count) {
    int carry = 0;
    for (int base = 0; base < count; base += BLOCK) {
        int i = base + threadIdx.x;
        int v = i < count ? tile_sums[i] : 0;
        int total;
        int inc = block_scan_inclusive(v, &total);
        if (i < count)
            tile_sums[i] = carry + inc - v; /* exclusive */
        carry += total;
    }
}

/* A tile's elements move between global memory (coalesced: element
 * k * BLOCK + tid) and each thread's ITEMS consecutive elements through
 * shared memory, padded by one word in 32 against bank conflicts. */
#define PAD(j) ((j) + ((j) >> 5))

extern "C" __global__ void scan_down(const int *__restrict__ x, long long n, const int *__restrict__ tile_prefix,
                                     int *__restrict__ y) {
    __shared__ int buf[PAD(TILE)];
    long long base = (long long)blockIdx.x * TILE;
    for (int k = 0; k < ITEMS; k++) {
        int j = k * BLOCK + threadIdx.x;
        buf[PAD(j)] = base + j < n ? x[base + j] : 0;
    }
    __syncthreads();
    int v[ITEMS];
    int s = 0;
    for (int k = 0; k < ITEMS; k++) {
        v[k] = buf[PAD(threadIdx.x * ITEMS + k)];
        s += v[k];
    }
    int total;
    int inc = block_scan_inclusive(s, &total);
    int run = tile_prefix[blockIdx.x] + inc - s;
    for (int k = 0; k < ITEMS; k++) {
        run += v[k];
        buf[PAD(threadIdx.x * ITEMS + k)] = run;
    }
    __syncthreads();
    for (int k = 0; k < ITEMS; k++) {
        int j = k * BLOCK + threadIdx.x;
        if (base + j < n)
            y[base + j] = buf[PAD(j)];
    }
}
