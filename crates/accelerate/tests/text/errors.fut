-- Run-time errors point at the operation that failed.

-- ==
-- entry: divide
-- input { 1i32 0i32 } error: division by zero
-- input { 6i32 3i32 } output { 2i32 }
entry divide (a: i32) (b: i32) = a / b

-- ==
-- entry: read
-- input { [1i32, 2i32] 2i64 } error: is out of bounds
entry read (xs: []i32) (i: i64) = map (\j -> xs[j + i]) (iota 2)

-- ==
-- entry: negative
-- input { -3i64 } error: negative extent
entry negative (n: i64) = iota n

-- Futhark's size rule: the arrays of `map2`, `zip` and `scatter` have
-- one size.
-- ==
-- entry: sizes
-- input { [1i32, 2i32, 3i32] [4i32, 5i32] } error: zip needs arrays of one shape, given [3] and [2]
-- input { [1i32, 2i32] [4i32, 5i32] } output { [5i32, 7i32] [1i32, 2i32] }
entry sizes (xs: []i32) (ys: []i32) =
  let (a, _) = unzip (zip xs ys)
  in (map2 (+) xs ys, a)

-- ==
-- entry: scatter_sizes
-- input { [0i32, 0i32] [0i64, 1i64] [7i32] } error: scatter needs arrays of one shape
entry scatter_sizes (dest: []i32) (is: []i64) (vs: []i32) = scatter dest is vs

-- Arguments sharing a size parameter have one size.
def dot [n] (xs: [n]f32) (ys: [n]f32) : f32 = reduce (+) 0 (map2 (*) xs ys)

-- ==
-- entry: size_parameter
-- input { [1f32, 2f32] [3f32, 4f32] } output { 11f32 }
-- input { [1f32, 2f32] [3f32] } error: a size parameter needs arrays of one shape, given [2] and [1]
entry size_parameter (xs: []f32) (ys: []f32) = dot xs ys

-- ==
-- entry: entry_sizes
-- input { [1f32, 2f32] [3f32, 4f32, 5f32] } error: needs arrays of one shape, given [2] and [3]
entry entry_sizes [n] (xs: [n]f32) (ys: [n]f32) : [n]f32 = map (+ 1) xs
