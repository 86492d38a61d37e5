-- Scalars: literals, arithmetic, comparisons, let, if, tuples, records
-- and conversions between the numeric types.

-- ==
-- entry: arith
-- input { 7i32 2i32 } output { 9i32 5i32 14i32 3i32 1i32 }
-- input { -7i32 2i32 } output { -5i32 -9i32 -14i32 -4i32 1i32 }
entry arith (a: i32) (b: i32) = (a + b, a - b, a * b, a / b, a % b)

-- Futhark's `/` and `%` round toward negative infinity; `//` and `%%`
-- truncate toward zero.
-- ==
-- entry: quot
-- input { -7i32 2i32 } output { -3i32 -1i32 }
entry quot (a: i32) (b: i32) = (a // b, a %% b)

-- ==
-- entry: floats
-- input { 2.0f64 } output { 1.4142135623730951f64 7.38905609893065f64 4.0f64 }
entry floats (x: f64) = (f64.sqrt x, f64.exp x, x ** 2)

-- half precision: arithmetic, the namespace's functions and constants,
-- conversions, and arrays of f16
-- ==
-- entry: halves
-- input { 2.25f16 [1f16, 2f16, 3.5f16] }
-- output { 5.5f16 1.5f16 2.25f32 2i32 7f16 f16.inf 6.5f16 [2f16, 4f16, 7f16] true }
entry halves (x: f16) (xs: []f16) =
  (x * 2 + 1, f16.sqrt x, f32.f16 x, i32.f16 x, f16.i32 7, f16.highest, f16.sum xs, map (* 2) xs,
   f16.isinf (x / 0))

-- ==
-- entry: conv
-- input { 3.75f32 } output { 3i32 3.75f64 4i64 true }
entry conv (x: f32) = (i32.f32 x, f64.f32 x, i64.f32 (f32.round x), bool.i32 (i32.f32 x))

-- ==
-- entry: branch
-- input { 5i64 } output { 25i64 }
-- input { -5i64 } output { 5i64 }
entry branch (x: i64) = if x > 0 then x * x else -x

-- ==
-- entry: lets
-- input { 3f32 } output { 16f32 }
entry lets (x: f32) =
  let y = x + 1
  let (a, b) = (y, y * 2)
  in a * b - a * a + a * y - y * 4

-- ==
-- entry: records
-- input { 1i32 2i32 } output { 3i32 -1i32 }
entry records (a: i32) (b: i32) =
  let r = {x = a, y = b}
  let {x, y = yy} = r
  let s = {x = 10, y = r.y}
  in (x + yy, s.x - 11 + r.y - 2 * r.x + r.y - 2)

-- `r with x = v` replaces one field; a path reaches into nested records
-- ==
-- entry: record_update
-- input { 1i32 2i32 } output { 1i32 7i32 2i32 4i32 9i32 }
entry record_update (a: i32) (b: i32) =
  let r = {x = a, y = b}
  let s = r with y = 7
  let t = {inner = r, w = 4i32}
  let u = t with inner.x = 9
  in (s.x, s.y, r.y, u.w, u.inner.x + u.inner.y - b)

-- an update inside a map, over an array of records
-- ==
-- entry: records_updated
-- input { [1f32, 2f32, 3f32] [10f32, 20f32, 30f32] }
-- output { [1f32, 2f32, 3f32] [11f32, 22f32, 33f32] }
entry records_updated (xs: []f32) (ys: []f32) =
  let ps = map2 (\x y -> {pos = x, vel = y}) xs ys
  let qs = map (\p -> p with vel = p.vel + p.pos) ps
  in (map (.pos) qs, map (.vel) qs)

-- ==
-- entry: logic
-- input { 3i32 } output { true false true }
-- input { 0i32 } output { false false false }
entry logic (x: i32) = (x > 0 && 10 / x > 1, x < 0 || x > 100, !(x == 0))

-- ==
-- entry: bits
-- input { 12u8 10u8 } output { 8u8 14u8 6u8 48u8 3u8 }
entry bits (a: u8) (b: u8) = (a & b, a | b, a ^ b, a << 2, a >> 2)

-- ==
-- entry: limits
-- input { } output { 2147483647i32 -128i8 3.1415927f32 }
entry limits = (i32.highest, i8.lowest, f32.pi)
