-- Matching, in-place updates, slices and local functions.
type pair 't = (t, t)

type matrix [n] [m] = [n][m]f32

def classify (x: i32): i32 =
  match x
  case 0 -> 1
  case -1 -> 2
  case _ -> 3

def swap 't ((a, b): pair t): pair t = (b, a)

def row [n] [m] (a: matrix [n] [m]) (i: i64): [m]f32 = a[i]

def corner (a: [][]f32) = a[1:, :2]

def every_other (xs: []i32) = xs[::2]

def first_col [n] (a: [n][]f32): [n]f32 = a[:, 0]

def set (xs: []i32) (i: i64) (v: i32) =
  let ys = xs with [i] = v
  let ys[0] = v + 1
  in ys

def sum_squares (xs: []i32): i32 =
  let sq (x: i32): i32 = x * x
  let total = loop acc = 0 for x in xs do acc + sq x
  in total

def is_origin (p: {x: i32, y: i32}): bool =
  match p
  case {x = 0, y = 0} -> true
  case _ -> false

def shifts (x: u32) = (x << 2u32) | (x >> 1u32) ^ !x & 0xffu32

def logic (a: bool) (b: bool) = !a || a && b != (1 <= 2)
