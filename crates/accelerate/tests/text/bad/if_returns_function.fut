-- TFP'18: a conditional may not return a function.
-- ==
-- error: restriction
entry main (b: bool) (x: i32) =
  let f = if b then (\y -> y + 1) else (\y -> y * 2)
  in f x
