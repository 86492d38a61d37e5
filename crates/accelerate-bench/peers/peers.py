"""The Python peers of the benchmark harness: the same problems computed
with the tools a user would otherwise pick (NumPy, Numba with
``parallel=True``, with and without ``fastmath=True``, and JAX with
``jit``), on the same data, for ``accelerate-bench`` to time and check
beside its own variants (``src/peers.rs``).

One process serves one variant. It reads commands on standard input, one
per line, and answers each with one line:

    setup BENCH VARIANT DIR ARGS...   ->  ok | skip REASON
    run                               ->  done SECONDS

``setup`` loads the inputs the harness wrote into DIR (raw little-endian
arrays), prepares the variant (compiling it and running it once, so that
no compilation is timed) and answers ``skip`` with the reason when the
variant's library is not installed. ``run`` computes the result once,
timing only the computation (``time.perf_counter`` around the call, with
JAX's ``block_until_ready``), then writes the result into DIR as
``out-VARIANT.bin`` for the harness to check.
"""

import sys
import time

import numpy as np


def nbody_numpy(bodies, dt, eps2):
    """One step of n-body, all pairs at once (n x n temporaries)."""
    p, v, m = bodies[:, 0:3], bodies[:, 3:6], bodies[:, 6]
    r = p[None, :, :] - p[:, None, :]  # r[i, j] = p[j] - p[i]
    d2 = r[..., 0] * r[..., 0] + r[..., 1] * r[..., 1] + r[..., 2] * r[..., 2] + eps2
    inv = np.float32(1) / np.sqrt(d2)
    s = m[None, :] * (inv * inv * inv)
    a = (r * s[..., None]).sum(axis=1)
    vel = v + a * dt
    pos = p + vel * dt
    return np.concatenate([pos, vel, m[:, None]], axis=1)


def nbody_numba(fastmath):
    """All pairs, one body per parallel iteration, over one contiguous
    array per field (so that the inner loop can be vectorised)."""
    from numba import njit, prange

    @njit(parallel=True, fastmath=fastmath)
    def step(px, py, pz, vx, vy, vz, m, dt, eps2, out):
        n = px.shape[0]
        for i in prange(n):
            ax = np.float32(0.0)
            ay = np.float32(0.0)
            az = np.float32(0.0)
            for j in range(n):
                rx = px[j] - px[i]
                ry = py[j] - py[i]
                rz = pz[j] - pz[i]
                d2 = rx * rx + ry * ry + rz * rz + eps2
                inv = np.float32(1.0) / np.sqrt(d2)
                s = m[j] * (inv * inv * inv)
                ax += rx * s
                ay += ry * s
                az += rz * s
            nvx = vx[i] + ax * dt
            nvy = vy[i] + ay * dt
            nvz = vz[i] + az * dt
            out[i, 0] = px[i] + nvx * dt
            out[i, 1] = py[i] + nvy * dt
            out[i, 2] = pz[i] + nvz * dt
            out[i, 3] = nvx
            out[i, 4] = nvy
            out[i, 5] = nvz
            out[i, 6] = m[i]

    return step


def nbody_jax():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(bodies, dt, eps2):
        p, v, m = bodies[:, 0:3], bodies[:, 3:6], bodies[:, 6]
        r = p[None, :, :] - p[:, None, :]
        d2 = r[..., 0] * r[..., 0] + r[..., 1] * r[..., 1] + r[..., 2] * r[..., 2] + eps2
        inv = 1.0 / jnp.sqrt(d2)
        s = m[None, :] * (inv * inv * inv)
        a = (r * s[..., None]).sum(axis=1)
        vel = v + a * dt
        pos = p + vel * dt
        return jnp.concatenate([pos, vel, m[:, None]], axis=1)

    return step


def setup_nbody(variant, folder, args):
    """A function of no arguments computing one step, and its result's
    array (the harness's `Body`: position, velocity, mass)."""
    n = int(args[0])
    dt, eps2 = np.float32(args[1]), np.float32(args[2])
    bodies = np.fromfile(f"{folder}/bodies.bin", dtype="<f4").reshape(n, 7)
    if variant == "numpy":
        return lambda: nbody_numpy(bodies, dt, eps2)
    if variant in ("numba", "numba-fastmath"):
        step = nbody_numba(variant == "numba-fastmath")
        fields = [np.ascontiguousarray(bodies[:, k]) for k in range(7)]
        out = np.empty_like(bodies)

        def run():
            step(*fields, dt, eps2, out)
            return out

        return run
    if variant == "jax":
        import jax

        step = nbody_jax()
        device_bodies = jax.device_put(bodies)
        return lambda: step(device_bodies, dt, eps2).block_until_ready()
    raise ValueError(f"no variant {variant} of nbody")


def dotp_numba():
    from numba import njit, prange

    @njit(parallel=True)
    def dotp(xs, ys):
        s = np.float32(0.0)
        for i in prange(xs.shape[0]):
            s += xs[i] * ys[i]
        return s

    return dotp


def setup_dotp(variant, folder, args):
    """A function of no arguments computing the dot product, as an array
    of one `f32`."""
    n = int(args[0])
    xs = np.fromfile(f"{folder}/xs.bin", dtype="<f4", count=n)
    ys = np.fromfile(f"{folder}/ys.bin", dtype="<f4", count=n)
    if variant == "numpy":
        return lambda: np.dot(xs, ys)
    if variant == "numba":
        dotp = dotp_numba()
        return lambda: np.float32(dotp(xs, ys))
    if variant == "jax":
        import jax
        import jax.numpy as jnp

        dotp = jax.jit(jnp.dot)
        dx, dy = jax.device_put(xs), jax.device_put(ys)
        return lambda: dotp(dx, dy).block_until_ready()
    raise ValueError(f"no variant {variant} of dotp")


SETUPS = {"nbody": setup_nbody, "dotp": setup_dotp}


def main():
    run = None
    out_path = None
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "setup":
            bench, variant, folder, args = words[1], words[2], words[3], words[4:]
            try:
                run = SETUPS[bench](variant, folder, args)
                run()  # compile and warm up, untimed
            except ImportError as e:
                print(f"skip {e}", flush=True)
                continue
            out_path = f"{folder}/out-{variant}.bin"
            print("ok", flush=True)
        elif words[0] == "run":
            start = time.perf_counter()
            result = run()
            seconds = time.perf_counter() - start
            np.asarray(result, dtype="<f4").reshape(-1).tofile(out_path)
            print(f"done {seconds!r}", flush=True)
        else:
            print(f"skip unknown command {words[0]}", flush=True)


if __name__ == "__main__":
    main()
