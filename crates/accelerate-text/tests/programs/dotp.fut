-- Dot product of two vectors.
def dotprod [n] (xs: [n]f32) (ys: [n]f32): f32 =
  reduce (+) 0 (map2 (*) xs ys)

entry main [n] (xs: [n]f32) (ys: [n]f32): f32 = dotprod xs ys
