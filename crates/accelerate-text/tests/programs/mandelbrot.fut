-- Mandelbrot set, escape-time counts.
type complex = (f32, f32)

def dot ((a, b): complex): f32 = a * a + b * b

def mul ((a, b): complex) ((c, d): complex): complex = (a * c - b * d, a * d + b * c)

def add ((a, b): complex) ((c, d): complex): complex = (a + c, b + d)

def divergence (limit: i32) (c: complex): i32 =
  let (_, i) =
    loop (z, i) = (c, 0) while i < limit && dot z < 4.0f32 do
      (add c (mul z z), i + 1)
  in i

entry mandelbrot (screenX: i64) (screenY: i64) (limit: i32)
                 (xmin: f32) (ymin: f32) (xmax: f32) (ymax: f32): [screenY][screenX]i32 =
  let sizex = xmax - xmin
  let sizey = ymax - ymin
  in tabulate_2d screenY screenX (\y x ->
       let c = (xmin + f32.i64 x * sizex / f32.i64 screenX,
                ymin + f32.i64 y * sizey / f32.i64 screenY)
       in divergence limit c)
