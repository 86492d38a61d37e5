"""The exported library accdemo from Python, through accelerate_ffi
(ctypes and NumPy). Prints each result's elements as the hexadecimal bits
of their values, in the format of tests/c/accdemo_test.c, for the Rust
test (tests/python.rs) to compare with the same programs run from Rust;
then makes bad calls and prints the status and message of each.

    python accdemo_test.py /path/to/libaccdemo.so
"""

import sys

import numpy as np

import accelerate_ffi

N = 1000


def bits(name, a):
    a = np.asarray(a, dtype=np.float32).reshape(-1)
    print(name, a.size, *(f"{b:08x}" for b in a.view(np.uint32)))


def bad(what, f):
    try:
        f()
    except accelerate_ffi.AccError as e:
        print("bad", what, e.code, e.message)
    else:
        print("bad", what, "no error")


def main():
    lib = accelerate_ffi.load(sys.argv[1])
    i = np.arange(N)
    xs = (i % 17).astype(np.float32) * np.float32(0.25) - np.float32(2.0)
    ys = ((i * 7) % 13).astype(np.float32) * np.float32(0.5) - np.float32(3.0)
    price = np.float32(5.0) + (i % 26).astype(np.float32)
    strike = np.float32(1.0) + (i % 100).astype(np.float32)
    years = np.float32(0.25) + (i % 10).astype(np.float32) * np.float32(0.5)
    with lib.context() as ctx:
        (d,) = ctx.dotp(xs, ys)
        bits("dotp", d)
        call, put = ctx.blackscholes(price, strike, years)
        bits("call", call)
        bits("put", put)
        (h,) = ctx.halve_until(price[:10], np.float32(10.0))
        bits("halve_until", h)
        (dxx,) = ctx.dotp(xs, xs)
        bits("dotp-xx", dxx)
        # NumPy's own dot product, as a sanity check of the binding (its
        # order of summation differs: compared within rounding)
        assert abs(float(d) - float(np.dot(xs.astype(np.float64), ys.astype(np.float64)))) < 1e-2

        bad("wrong-dtype", lambda: ctx.dotp(xs, np.arange(N, dtype=np.float64)))
        bad("wrong-rank", lambda: ctx.dotp(xs, np.float32(1.0)))
        bad("division-by-zero", lambda: ctx.divide(np.array([1, 2, 3]), np.array([1, 0, 1])))
        code = ctx.lib.array_free(ctx.handle, 12345)
        print("bad made-up-handle", code, ctx.lib.context_error(ctx.handle).decode())
        two_d = np.ones((2, 3), dtype=np.float32)
        h2 = ctx.new_array(two_d, "f32")
        bad("read-at-wrong-rank", lambda: ctx.read_array(h2, "f32", 1))
        ctx.lib.array_free(ctx.handle, h2)
        bad("use-after-free", lambda: ctx.read_array(h2, "f32", 2))
    bad("bad-option", lambda: lib.context("threads=many"))
    print("done")


main()
