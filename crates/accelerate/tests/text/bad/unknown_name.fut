-- ==
-- error: unknown
entry main (x: i32) = x + y
