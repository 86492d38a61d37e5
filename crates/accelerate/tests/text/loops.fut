-- Loops: `for`, `for ... in` and `while`, over scalars (a scalar loop)
-- and over arrays (a loop of array operations), and inside the function
-- of a `map`.

-- ==
-- entry: factorial
-- input { 10i64 } output { 3628800i64 }
-- input { 0i64 } output { 1i64 }
entry factorial (n: i64) = loop acc = 1 for i < n do acc * (i + 1)

-- ==
-- entry: collatz
-- input { 27i64 } output { 111i32 }
entry collatz (n: i64) =
  let (_, steps) = loop (x, s) = (n, 0i32) while x != 1 do
    if x % 2 == 0 then (x / 2, s + 1) else (3 * x + 1, s + 1)
  in steps

-- ==
-- entry: sum_in
-- input { [1f32, 2f32, 3f32, 4f32] } output { 10f32 }
entry sum_in (xs: []f32) = loop s = 0f32 for x in xs do s + x

-- ==
-- entry: array_state
-- input { [1i32, 2i32, 3i32] 3i32 } output { [8i32, 16i32, 24i32] }
entry array_state (xs: []i32) (k: i32) =
  loop ys = xs for _i < k do map (* 2) ys

-- ==
-- entry: array_while
-- input { [1i32, 5i32, 2i32] } output { [16i32, 80i32, 32i32] 4i32 }
entry array_while (xs: []i32) =
  loop (ys, n) = (xs, 0) while reduce (+) 0 ys < 100 do (map (* 2) ys, n + 1)

-- ==
-- entry: per_element
-- input { [1i64, 4i64, 6i64] } output { [1i64, 24i64, 720i64] }
entry per_element (xs: []i64) =
  map (\x -> loop acc = 1 for i < x do acc * (i + 1)) xs

-- ==
-- entry: mandel_like
-- input { [0f32, 0.5f32, 1f32] } output { [100i32, 5i32, 3i32] }
entry mandel_like (cs: []f32) =
  map (\c -> let (_, i) = loop (z, i) = (0f32, 0i32) while z * z <= 4 && i < 100 do (z * z + c, i + 1)
             in i) cs
