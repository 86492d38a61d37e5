-- A combinator inside the function of another (nested data parallelism)
-- is not lowered yet: an error naming it, not a crash.
-- ==
-- error: nested
entry main (m: [][]f32) = map (\row -> map (* 2) row) m
