-- TFP'18: an array may not hold functions.
-- ==
-- error: restriction
entry main (a: i32) (b: i32) (n: i64) =
  let fs = [\y -> y + a, \z -> z + b]
  in fs[n] 5
