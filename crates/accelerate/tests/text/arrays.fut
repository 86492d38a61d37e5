-- Arrays: literals, iota, replicate, indexing and slicing, and the
-- prelude's index-space functions.

-- ==
-- entry: literal
-- input { 2i32 } output { [1i32, 2i32, 3i32] [[1f32, 2f32], [3f32, 4f32]] [2i32, 4i32] }
entry literal (x: i32) = ([1, 2, 3], [[1f32, 2], [3, 4]], [x, x * 2])

-- ==
-- entry: iotas
-- input { 4i64 } output { [0i64, 1i64, 2i64, 3i64] [7i32, 7i32, 7i32, 7i32] }
-- input { 0i64 } output { empty([0]i64) empty([0]i32) }
entry iotas (n: i64) = (iota n, replicate n 7i32)

-- ==
-- entry: index
-- input { [10i32, 20i32, 30i32, 40i32] 2i64 } output { 30i32 [20i32, 30i32] [40i32, 30i32, 20i32, 10i32] [10i32, 30i32] }
entry index (xs: []i32) (i: i64) = (xs[i], xs[1:3], xs[::-1], xs[::2])

-- ==
-- entry: index
-- input { [10i32, 20i32] 5i64 } error: out of bounds
-- input { [10i32, 20i32] -1i64 } error: out of bounds

-- ==
-- entry: matrix
-- input { [[1i32, 2i32, 3i32], [4i32, 5i32, 6i32]] }
-- output { 6i32 [4i32, 5i32, 6i32] [[1i32, 4i32], [2i32, 5i32], [3i32, 6i32]] [1i32, 2i32, 3i32, 4i32, 5i32, 6i32] [3i32, 6i32] }
entry matrix (m: [][]i32) = (m[1, 2], m[1], transpose m, flatten m, m[:, 2])

-- ==
-- entry: reshape
-- input { [1i32, 2i32, 3i32, 4i32, 5i32, 6i32] } output { [[1i32, 2i32, 3i32], [4i32, 5i32, 6i32]] }
-- input { [1i32, 2i32, 3i32] } error: reshape
entry reshape (xs: []i32) = unflatten 2 3 xs

-- ==
-- entry: pieces
-- input { [1i32, 2i32, 3i32, 4i32, 5i32] }
-- output { [5i32, 4i32, 3i32, 2i32, 1i32] [3i32, 4i32, 5i32, 1i32, 2i32] [1i32, 2i32] [3i32, 4i32, 5i32] [1i32, 2i32, 3i32, 4i32, 5i32, 1i32, 2i32] 5i64 1i32 5i32 }
entry pieces (xs: []i32) =
  let (a, b) = split 2 xs
  in (reverse xs, rotate 2 xs, a, b, concat xs (take 2 xs), length xs, head xs, last xs)

-- ==
-- entry: tails
-- input { [1i32, 2i32, 3i32] } output { [2i32, 3i32] [1i32, 2i32] [2i32] }
entry tails (xs: []i32) = (tail xs, init xs, drop 1 (init xs))

-- ==
-- entry: update
-- input { [1i32, 2i32, 3i32] 1i64 } output { [1i32, 9i32, 3i32] }
-- input { [1i32, 2i32, 3i32] 3i64 } error: out of bounds
entry update (xs: []i32) (i: i64) = xs with [i] = 9

-- ==
-- entry: tabulates
-- input { 3i64 2i64 } output { [0i64, 2i64, 4i64] [[0i64, 1i64], [10i64, 11i64], [20i64, 21i64]] }
entry tabulates (n: i64) (m: i64) = (tabulate n (\i -> i * 2), tabulate_2d n m (\i j -> i * 10 + j))
