/* A C program using the exported library accdemo (accdemo.h, libaccdemo.so):
 * runs each entry point on inputs made from the formulas below, prints each
 * result's elements as the hexadecimal bits of their values (so that the Rust
 * test, tests/c_api.rs, compares them exactly with the same programs run
 * from Rust), then makes bad calls and prints their status and message.
 *
 *   accdemo_test            results and bad calls
 *   accdemo_test bench N    N calls of dotp on 10 elements: the time per call
 */
#include "accdemo.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 1000

static accdemo_context *ctx;

static void fail(const char *what) {
    const char *m = accdemo_context_error(ctx);
    fprintf(stderr, "%s failed: %s\n", what, m ? m : "(no message)");
    exit(1);
}

static void print_f32s(const char *name, accdemo_array *arr, int rank) {
    const int64_t *shape = accdemo_array_shape(ctx, arr);
    if (!shape) fail("accdemo_array_shape");
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    float *v = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (accdemo_array_values(ctx, arr, ACCDEMO_F32, rank, v) != ACCDEMO_OK) fail("accdemo_array_values");
    printf("%s %" PRId64, name, n);
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        printf(" %08" PRIx32, bits);
    }
    printf("\n");
    free(v);
}

static void bad_in(accdemo_context *c, const char *what, int status) {
    const char *m = accdemo_context_error(c);
    printf("bad %s %d %s\n", what, status, m ? m : "(null)");
}

static void bad(const char *what, int status) { bad_in(ctx, what, status); }

static void bad_null(const char *what, const void *handle) {
    const char *m = accdemo_context_error(ctx);
    printf("bad %s %s %s\n", what, handle ? "handle" : "null", m ? m : "(null)");
}

int main(int argc, char **argv) {
    ctx = accdemo_context_new(NULL);
    if (!ctx) {
        fprintf(stderr, "accdemo_context_new: %s\n", accdemo_context_error(NULL));
        return 1;
    }
    float xs[N], ys[N], price[N], strike[N], years[N];
    for (int i = 0; i < N; i++) {
        xs[i] = (float)(i % 17) * 0.25f - 2.0f;
        ys[i] = (float)((i * 7) % 13) * 0.5f - 3.0f;
        price[i] = 5.0f + (float)(i % 26);
        strike[i] = 1.0f + (float)(i % 100);
        years[i] = 0.25f + (float)(i % 10) * 0.5f;
    }
    accdemo_array *x = accdemo_new_f32_1d(ctx, xs, N), *y = accdemo_new_f32_1d(ctx, ys, N);
    if (!x || !y) fail("accdemo_new_f32_1d");

    if (argc == 3 && strcmp(argv[1], "bench") == 0) {
        long calls = atol(argv[2]);
        accdemo_array *a = accdemo_new_f32_1d(ctx, xs, 10), *b = accdemo_new_f32_1d(ctx, ys, 10), *out[1];
        if (accdemo_dotp(ctx, out, a, b) != ACCDEMO_OK) fail("accdemo_dotp"); /* compiles it */
        accdemo_array_free(ctx, out[0]);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (long i = 0; i < calls; i++) {
            float r;
            if (accdemo_dotp(ctx, out, a, b) != ACCDEMO_OK) fail("accdemo_dotp");
            if (accdemo_values_f32_0d(ctx, out[0], &r) != ACCDEMO_OK) fail("accdemo_values_f32_0d");
            if (accdemo_array_free(ctx, out[0]) != ACCDEMO_OK) fail("accdemo_array_free");
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        printf("bench %ld calls of dotp (10 elements) with a read-back and a free: %.3f s, %.2f us a call\n",
               calls, s, s / (double)calls * 1e6);
        return accdemo_context_free(ctx);
    }

    accdemo_array *out[2];
    if (accdemo_dotp(ctx, out, x, y) != ACCDEMO_OK) fail("accdemo_dotp");
    print_f32s("dotp", out[0], 0);
    accdemo_array_free(ctx, out[0]);

    accdemo_array *p = accdemo_new_f32_1d(ctx, price, N), *k = accdemo_new_f32_1d(ctx, strike, N),
                  *t = accdemo_new_f32_1d(ctx, years, N);
    if (accdemo_blackscholes(ctx, out, p, k, t) != ACCDEMO_OK) fail("accdemo_blackscholes");
    print_f32s("call", out[0], 1);
    print_f32s("put", out[1], 1);
    accdemo_array_free(ctx, out[0]);
    accdemo_array_free(ctx, out[1]);

    float limit = 10.0f;
    accdemo_array *l = accdemo_new_f32_0d(ctx, &limit), *xs10 = accdemo_new_f32_1d(ctx, price, 10);
    if (accdemo_halve_until(ctx, out, xs10, l) != ACCDEMO_OK) fail("accdemo_halve_until");
    print_f32s("halve_until", out[0], 1);
    accdemo_array_free(ctx, out[0]);

    /* bad calls: each must return an error code and a message */
    bad_in(NULL, "null-context", accdemo_dotp(NULL, out, x, y));
    bad("null-array", accdemo_dotp(ctx, out, x, NULL));
    bad("null-results", accdemo_dotp(ctx, NULL, x, y));
    bad("made-up-array", accdemo_dotp(ctx, out, x, (accdemo_array *)(uintptr_t)0x1234567));
    int64_t ints[3] = {1, 2, 3}, zeros[3] = {1, 0, 1};
    accdemo_array *i64s = accdemo_new_i64_1d(ctx, ints, 3);
    bad("wrong-type", accdemo_dotp(ctx, out, x, i64s));
    bad("wrong-rank", accdemo_dotp(ctx, out, x, l));
    accdemo_array *z = accdemo_new_i64_1d(ctx, zeros, 3);
    bad("division-by-zero", accdemo_divide(ctx, out, i64s, z));
    float f;
    bad("values-of-another-type", accdemo_values_f32_1d(ctx, i64s, &f));
    bad("free-twice-first", accdemo_array_free(ctx, y));
    bad("free-twice-second", accdemo_array_free(ctx, y));
    bad("use-after-free", accdemo_dotp(ctx, out, x, y));
    int64_t negative[1] = {-3};
    bad_null("negative-extent", accdemo_array_new(ctx, ACCDEMO_F32, 1, negative, xs));
    bad_null("bad-type-code", accdemo_array_new(ctx, 99, 1, negative, xs));
    int64_t three[1] = {3};
    bad_null("null-data", accdemo_array_new(ctx, ACCDEMO_F32, 1, three, NULL));
    uint8_t not_bools[3] = {0, 1, 7};
    bad_null("bool-not-0-or-1", accdemo_array_new(ctx, ACCDEMO_BOOL, 1, three, not_bools));
    accdemo_context *other = accdemo_context_new("backend=nonsense");
    printf("bad bad-option %s %s\n", other ? "handle" : "null", accdemo_context_error(NULL));
    /* the context still works after all that */
    if (accdemo_dotp(ctx, out, x, x) != ACCDEMO_OK) fail("accdemo_dotp after the bad calls");
    print_f32s("dotp-xx", out[0], 0);
    int freed = accdemo_context_free(ctx);
    printf("bad context-free-twice %d %d\n", freed, accdemo_context_free(ctx));
    printf("bad dotp-after-context-free %d\n", accdemo_dotp(ctx, out, x, x));
    printf("done\n");
    return 0;
}
