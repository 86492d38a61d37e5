-- One step of the all-pairs n-body simulation (ICFP'13 §5), as a Futhark
-- programmer writes it: each body's acceleration a `reduce` over a `map`
-- of the interactions with every body, nested in a `map` over the bodies.
-- The lifting transformation flattens the nesting into the `replicate`
-- and `fold` that accelerate-programs' `nbody.rs` writes by hand.

type v3 = {x: f32, y: f32, z: f32}
type body = {pos: v3, vel: v3, mass: f32}

def add3 (a: v3) (b: v3) : v3 = {x = a.x + b.x, y = a.y + b.y, z = a.z + b.z}

def interaction (eps2: f32) (p1: v3) (p2: v3) (m2: f32) : v3 =
  let rx = p2.x - p1.x
  let ry = p2.y - p1.y
  let rz = p2.z - p1.z
  let d2 = rx * rx + ry * ry + rz * rz + eps2
  let inv = 1 / f32.sqrt d2
  let s = m2 * (inv * inv * inv)
  in {x = rx * s, y = ry * s, z = rz * s}

def step (dt: f32) (eps2: f32) (bodies: []body) : []body =
  let zero = {x = 0, y = 0, z = 0}
  let accels = map (\(bi: body) -> reduce add3 zero (map (\(bj: body) -> interaction eps2 bi.pos bj.pos bj.mass) bodies)) bodies
  in map2 (\(b: body) (a: v3) ->
             let v = {x = b.vel.x + a.x * dt, y = b.vel.y + a.y * dt, z = b.vel.z + a.z * dt}
             let p = {x = b.pos.x + v.x * dt, y = b.pos.y + v.y * dt, z = b.pos.z + v.z * dt}
             in {pos = p, vel = v, mass = b.mass})
          bodies accels

-- ==
-- input { [0f32, 1f32, 0f32, 1f32] [0f32, 0f32, 1f32, 1f32] [0f32, 0f32, 0f32, 1f32]
--         [0.1f32, 0f32, 0f32, 0f32] [0f32, 0.2f32, 0f32, 0f32] [0f32, 0f32, 0.3f32, 0f32]
--         [1f32, 2f32, 3f32, 0.5f32] }
-- output { [0.0012089f32, 0.9997945f32, 0.0000882f32, 0.9998749f32] [0.0003085f32, 0.0021235f32, 0.9998298f32, 0.9999102f32]
--          [0.0000096f32, 0.0000176f32, 0.0030176f32, 0.9998043f32] [0.1208863f32, -0.0205494f32, 0.0088223f32, -0.0125088f32]
--          [0.0308489f32, 0.2123512f32, -0.0170204f32, -0.0089799f32] [0.0009610f32, 0.0017645f32, 0.3017645f32, -0.0195667f32] }
entry main (px: []f32) (py: []f32) (pz: []f32) (vx: []f32) (vy: []f32) (vz: []f32) (mass: []f32)
         : ([]f32, []f32, []f32, []f32, []f32, []f32) =
  let bodies = map3 (\(x, y, z) (u, v, w) m -> {pos = {x, y, z}, vel = {x = u, y = v, z = w}, mass = m})
                    (zip3 px py pz) (zip3 vx vy vz) mass
  let next = step 0.01 0.0025 bodies
  in (map (.pos.x) next, map (.pos.y) next, map (.pos.z) next,
      map (.vel.x) next, map (.vel.y) next, map (.vel.z) next)
