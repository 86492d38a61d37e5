-- ==
-- error: parse error
entry main (x: i32) = (x + 1
