-- ==
-- error: bool
entry main (x: i32) = x + true
