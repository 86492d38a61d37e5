-- N-body simulation, one all-pairs step per iteration.
type vec3 = {x: f32, y: f32, z: f32}

type body = {pos: vec3, mass: f32, vel: vec3}

def vec_add (a: vec3) (b: vec3): vec3 = {x = a.x + b.x, y = a.y + b.y, z = a.z + b.z}

def vec_sub (a: vec3) (b: vec3): vec3 = {x = a.x - b.x, y = a.y - b.y, z = a.z - b.z}

def vec_scale (s: f32) ({x, y, z}: vec3): vec3 = {x = s * x, y = s * y, z = s * z}

def vec_dot (a: vec3) (b: vec3): f32 = a.x * b.x + a.y * b.y + a.z * b.z

def accel (eps: f32) (b0: body) (b1: body): vec3 =
  let r = vec_sub b1.pos b0.pos
  let rsqr = vec_dot r r + eps * eps
  let invr = 1.0f32 / f32.sqrt rsqr
  let invr3 = invr * invr * invr
  in vec_scale (b1.mass * invr3) r

def advance [n] (eps: f32) (dt: f32) (bodies: [n]body): [n]body =
  let zero = {x = 0, y = 0, z = 0}
  let accels = map (\b -> reduce vec_add zero (map (accel eps b) bodies)) bodies
  in map2 (\(b: body) (a: vec3) ->
             let vel = vec_add b.vel (vec_scale dt a)
             let pos = vec_add b.pos (vec_scale dt vel)
             in {pos, mass = b.mass, vel})
          bodies accels

entry main (steps: i32) (dt: f32) (xs: []f32) (ys: []f32) (zs: []f32) (ms: []f32) =
  let bodies = map4 (\x y z m -> {pos = {x, y, z}, mass = m, vel = {x = 0, y = 0, z = 0}}) xs ys zs ms
  let bodies' = loop bodies for _i < steps do advance 0.01 dt bodies
  in (map (.pos.x) bodies', map (.mass) bodies')
