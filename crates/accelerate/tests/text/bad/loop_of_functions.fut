-- TFP'18: a loop's state may not hold a function.
-- ==
-- error: restriction
entry main (xs: []i32) =
  let g = loop f = (\z -> z + 1) for x in xs do (\z -> x + f z)
  in g 0
