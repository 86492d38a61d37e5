-- A function returning arrays inside the function of a `map` that
-- returns arrays (three levels of nested data parallelism with array
-- results) is not lowered yet: an error naming it, not a crash.
-- ==
-- error: nested
entry main (m: [][]f32) = map (\row -> map (\x -> map (* x) row) row) m
