-- TFP'18: `map` may not make an array of functions.
-- ==
-- error: restriction
entry main (xs: []i32) =
  let fs = map (\x -> \y -> x + y) xs
  in length fs
