-- The array combinators: map of every arity, reduce, scan, filter,
-- partition, scatter, hist, reduce_by_index, zip and unzip.

-- ==
-- entry: maps
-- input { [1f32, 2f32, 3f32] [10f32, 20f32, 30f32] [100f32, 200f32, 300f32] }
-- output { [2f32, 3f32, 4f32] [11f32, 22f32, 33f32] [111f32, 222f32, 333f32] }
entry maps (xs: []f32) (ys: []f32) (zs: []f32) =
  (map (\x -> x + 1) xs, map2 (+) xs ys, map3 (\x y z -> x + y + z) xs ys zs)

-- ==
-- entry: reductions
-- input { [3i32, 1i32, 4i32, 1i32, 5i32] } output { 14i32 5i32 1i32 60i32 }
-- input { empty([0]i32) } output { 0i32 -2147483648i32 2147483647i32 1i32 }
entry reductions (xs: []i32) =
  (reduce (+) 0 xs, reduce i32.max i32.lowest xs, i32.minimum xs, i32.product xs)

-- ==
-- entry: scans
-- input { [1i64, 2i64, 3i64, 4i64] } output { [1i64, 3i64, 6i64, 10i64] }
-- input { empty([0]i64) } output { empty([0]i64) }
entry scans (xs: []i64) = scan (+) 0 xs

-- ==
-- entry: filters
-- input { [5i32, -1i32, 3i32, -4i32, 0i32] } output { [5i32, 3i32] [5i32, 3i32] [-1i32, -4i32, 0i32] }
-- input { empty([0]i32) } output { empty([0]i32) empty([0]i32) empty([0]i32) }
entry filters (xs: []i32) =
  let (pos, rest) = partition (> 0) xs
  in (filter (\x -> x > 0) xs, pos, rest)

-- ==
-- entry: scatters
-- input { [0f32, 0f32, 0f32, 0f32] [3i64, 0i64, 7i64] [1f32, 2f32, 3f32] } output { [2f32, 0f32, 0f32, 1f32] }
entry scatters (dest: []f32) (is: []i64) (vs: []f32) = scatter dest is vs

-- ==
-- entry: histograms
-- input { [1i64, 3i64, 1i64, 9i64, 0i64] [1i32, 2i32, 3i32, 4i32, 5i32] }
-- output { [5i32, 4i32, 0i32, 2i32] [5i32, 4i32, 0i32, 2i32] }
entry histograms (is: []i64) (vs: []i32) =
  (hist (+) 0 4 is vs, reduce_by_index (replicate 4 0) (+) 0 is vs)

-- ==
-- entry: zips
-- input { [1i32, 2i32] [true, false] } output { [2i32, 2i32] [false, true] }
entry zips (xs: []i32) (bs: []bool) =
  let ps = zip xs bs
  let (ys, cs) = unzip (map (\(x, b) -> (if b then x + 1 else x, !b)) ps)
  in (ys, cs)

-- ==
-- entry: predicates
-- input { [2i32, 4i32, 6i32] } output { true true false }
entry predicates (xs: []i32) =
  (all (\x -> x % 2 == 0) xs, any (> 5) xs, and (map (> 3) xs))

-- ==
-- entry: folds
-- input { [1i32, 2i32, 3i32] } output { 123i32 321i32 }
entry folds (xs: []i32) =
  (foldl (\acc x -> acc * 10 + x) 0 xs, foldr (\x acc -> acc * 10 + x) 0 xs)
