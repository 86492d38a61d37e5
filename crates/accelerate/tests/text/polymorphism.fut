-- Polymorphic definitions used at several types, size parameters, type
-- abbreviations, and `match`.

type point = {x: f32, y: f32}
type pair 't = (t, t)

def swap 't (p: pair t) : pair t = (p.1, p.0)

def first [n] 't (xs: [n]t) : t = xs[0]

def norm (p: point) : f32 = f32.sqrt (p.x * p.x + p.y * p.y)

def sum_len [n] (xs: [n]f32) : f32 = reduce (+) 0 xs / f32.i64 n

-- ==
-- entry: poly
-- input { 1i32 2.5f64 } output { 2i32 1i32 2.5f64 1i32 }
entry poly (a: i32) (b: f64) =
  let (p, q) = swap (a, 2)
  let (r, _) = swap (3.0, b)
  in (p, q, r, first [a, 4])

-- ==
-- entry: sizes
-- input { [1f32, 2f32, 3f32, 6f32] } output { 3f32 5f32 }
entry sizes [n] (xs: [n]f32) : (f32, f32) = (sum_len xs, norm {x = 3, y = 4})

-- ==
-- entry: matching
-- input { 0i32 } output { 100i32 }
-- input { 1i32 } output { 200i32 }
-- input { 7i32 } output { 14i32 }
entry matching (x: i32) =
  match x
  case 0 -> 100
  case 1 -> 200
  case n -> n * 2

-- ==
-- entry: match_tuple
-- input { 1i32 true } output { 1i32 }
-- input { 5i32 false } output { -5i32 }
-- input { 5i32 true } output { 50i32 }
entry match_tuple (x: i32) (b: bool) =
  match (x, b)
  case (1, _) -> 1
  case (y, false) -> -y
  case (y, true) -> y * 10
