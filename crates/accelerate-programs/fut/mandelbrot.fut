-- The Mandelbrot set's escape times: a scalar `while` per pixel, over a
-- grid of `height` rows of `width` points.

def escape (limit: i32) (cr: f32) (ci: f32) : i32 =
  let (_, _, i) =
    loop (zr, zi, i) = (0f32, 0f32, 0i32) while zr * zr + zi * zi <= 4 && i < limit do
      (zr * zr - zi * zi + cr, 2 * zr * zi + ci, i + 1)
  in i

-- ==
-- input { 6i64 4i64 50i32 -2f32 -1f32 0.5f32 }
-- output { [[1i32, 2i32, 3i32, 4i32, 50i32, 2i32], [1i32, 3i32, 5i32, 50i32, 50i32, 5i32], [50i32, 50i32, 50i32, 50i32, 50i32, 5i32], [1i32, 3i32, 5i32, 50i32, 50i32, 5i32]] }
entry main (width: i64) (height: i64) (limit: i32) (x0: f32) (y0: f32) (step: f32) : [][]i32 =
  let pixel k =
    let (row, col) = (k / width, k % width)
    in escape limit (x0 + f32.i64 col * step) (y0 + f32.i64 row * step)
  in unflatten height width (map pixel (iota (height * width)))
