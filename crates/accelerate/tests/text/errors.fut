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
