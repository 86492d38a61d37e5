"""n-body: one step of the all-pairs gravitation (`src/programs/nbody.rs`)."""

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


def setup(variant, folder, args):
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
