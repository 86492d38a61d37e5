-- Higher-order functions, compiled away by defunctionalisation: twice,
-- composition, partial application, closures in closures, functions in
-- records and tuples, sections, pipes, and functions passed to the array
-- combinators.

def twice 'a (g: a -> a) (x: a) : a = g (g x)

def compose 'a 'b 'c (f: b -> c) (g: a -> b) : a -> c = \x -> f (g x)

def add (x: i32) (y: i32) : i32 = x + y

def adder (k: i32) : i32 -> i32 = \x -> x + k

-- the slides' example
-- ==
-- entry: slides
-- input { 1i32 } output { 11i32 }
entry slides (y: i32) =
  let f = let a = 5 in twice (\z -> z + a)
  in f y

-- ==
-- entry: partial
-- input { 3i32 } output { 13i32 6i32 [4i32, 5i32] }
entry partial (x: i32) =
  let inc10 = add 10
  let double = twice (add x)
  in (inc10 x, double 0, map (add 1) [x, x + 1])

-- ==
-- entry: composition
-- input { 4i32 } output { 10i32 10i32 9i32 }
entry composition (x: i32) =
  let f = compose (\y -> y * 2) (\y -> y + 1)
  let g = (\y -> y + 1) >-> (\y -> y * 2)
  let h = (\y -> y * 2) <-< (\y -> y + 1)
  in (f x, g x, h x - 1)

-- ==
-- entry: closures
-- input { 2i32 } output { 107i32 }
entry closures (x: i32) =
  let outer = \a -> let inner = \b -> a + b + x in inner
  let g = outer 100
  in g 5

-- ==
-- entry: in_records
-- input { 6i32 } output { 7i32 12i32 5i32 }
entry in_records (x: i32) =
  let r = {inc = \y -> y + 1, dbl = \(y: i32) -> y * 2}
  let (f, g) = (\y -> y - 1, r.inc)
  in (g x, r.dbl x, f x)

-- a record update replacing a function field: the new function is the
-- field's static value from there on (Note [Record updates])
-- ==
-- entry: function_field_updated
-- input { 6i32 } output { 7i32 18i32 12i32 }
entry function_field_updated (x: i32) =
  let r = {inc = \(y: i32) -> y + 1, dbl = \(y: i32) -> y * 2}
  let s = r with dbl = \y -> y * 3
  in (s.inc x, s.dbl x, r.dbl x)

-- ==
-- entry: sections
-- input { [1i32, 2i32, 3i32] } output { [2i32, 4i32, 6i32] [9i32, 8i32, 7i32] [0i32, 1i32, 2i32] 6i32 }
entry sections (xs: []i32) =
  (map (* 2) xs, map (10 -) xs, xs |> map (\x -> x - 1), reduce (+) 0 <| xs)

-- ==
-- entry: soac_closure
-- input { [1f32, 2f32, 3f32] 2f32 } output { [3f32, 6f32, 11f32] 20f32 }
entry soac_closure (xs: []f32) (c: f32) =
  let poly = \x -> x * x + c
  let ys = map poly xs
  in (ys, reduce (+) 0 ys)

-- ==
-- entry: adders
-- input { 5i32 } output { 15i32 20i32 }
entry adders (x: i32) =
  let a10 = adder 10
  let a20 = adder 20
  in (a10 x, twice a10 x - 10 + (a20 x - 15) - 5)

def apply_all (fs: (i32 -> i32, i32 -> i32)) (x: i32) = fs.0 (fs.1 x)

-- ==
-- entry: in_tuples
-- input { 3i32 } output { 8i32 }
entry in_tuples (x: i32) = apply_all ((+ 1), (* 2)) (x + 0) + 1

def map_twice 'a (f: a -> a) (xs: []a) : []a = map (twice f) xs

-- ==
-- entry: hof_to_soac
-- input { [1i64, 2i64] } output { [4i64, 8i64] [3i64, 4i64] }
entry hof_to_soac (xs: []i64) = (map_twice (* 2) xs, map_twice (+ 1) xs)

-- the prelude's function plumbing
-- ==
-- entry: plumbing
-- input { 7i32 2i32 } output { 5i32 7i32 9i32 2i32 }
entry plumbing (a: i32) (b: i32) =
  (flip (-) b a, id a, uncurry (+) (a, b), snd (a, b))
