-- Nested data parallelism: combinators inside the functions of others,
-- `map` over the rows of arrays, and functions returning arrays; the
-- lifting transformation flattens them.

-- ==
-- entry: row_sums
-- input { [[1f32, 2f32], [3f32, 4f32], [5f32, 6f32]] } output { [3f32, 7f32, 11f32] }
-- input { empty([0][3]f32) } output { empty([0]f32) }
entry row_sums (m: [][]f32) : []f32 = map (\row -> reduce (+) 0 row) m

-- ==
-- entry: matvec
-- input { [[1f32, 2f32], [3f32, 4f32]] [1f32, 10f32] } output { [21f32, 43f32] }
entry matvec [n][k] (m: [n][k]f32) (v: [k]f32) : [n]f32 = map (\row -> f32.sum (map2 (*) row v)) m

-- ==
-- entry: outer
-- input { [1f32, 2f32, 3f32] } output { [6f32, 12f32, 18f32] }
entry outer (xs: []f32) : []f32 = map (\x -> reduce (+) 0 (map (\y -> x * y) xs)) xs

-- ==
-- entry: normalise
-- input { [[1f32, 3f32], [2f32, 2f32]] } output { [[0.25f32, 0.75f32], [0.5f32, 0.5f32]] }
entry normalise (m: [][]f32) : [][]f32 = map (\row -> let s = f32.sum row in map (/ s) row) m

-- ==
-- entry: add
-- input { [[1i32, 2i32], [3i32, 4i32]] [[10i32, 20i32], [30i32, 40i32]] } output { [[11i32, 22i32], [33i32, 44i32]] }
-- input { [[1i32, 2i32]] [[10i32, 20i32], [30i32, 40i32]] } error: needs arrays of one shape, given [1] and [2]
entry add (a: [][]i32) (b: [][]i32) : [][]i32 = map2 (map2 (+)) a b

-- ==
-- entry: expand
-- input { [1i32, 2i32] } output { [[1i32, 1i32, 1i32], [2i32, 2i32, 2i32]] }
entry expand (xs: []i32) : [][]i32 = map (\x -> replicate 3 x) xs

-- Futhark's arrays are regular: rows of different lengths are an error.
-- ==
-- entry: ranges
-- input { [2i64, 2i64] } output { [[0i64, 1i64], [0i64, 1i64]] }
-- input { [2i64, 3i64] } error: map needs arrays of one shape, given [2] and [3]
entry ranges (xs: []i64) : [][]i64 = map (\x -> iota x) xs

-- ==
-- entry: rows_max
-- input { [[1f32, 7f32], [3f32, 4f32]] } output { [7f32, 4f32] }
entry rows_max (m: [][]f32) : []f32 = map f32.maximum m
