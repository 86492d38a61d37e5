-- The Mandelbrot set's escape times: a scalar `while` per pixel, over a
-- grid of `height` rows of `width` points, tabulated in two dimensions
-- as the Rust form's `generate` is. (Tabulated flat and unflattened,
-- each pixel finds its row and column by an `i64` division of its flat
-- index, which no vector unit does: 1.2x the Rust form's time.)

def escape (limit: i32) (cr: f32) (ci: f32) : i32 =
  let (_, _, i) =
    loop (zr, zi, i) = (0f32, 0f32, 0i32) while zr * zr + zi * zi <= 4 && i < limit do
      (zr * zr - zi * zi + cr, 2 * zr * zi + ci, i + 1)
  in i

-- ==
-- input { 6i64 4i64 50i32 -2f32 -1f32 0.5f32 }
-- output { [[1i32, 2i32, 3i32, 4i32, 50i32, 2i32], [1i32, 3i32, 5i32, 50i32, 50i32, 5i32], [50i32, 50i32, 50i32, 50i32, 50i32, 5i32], [1i32, 3i32, 5i32, 50i32, 50i32, 5i32]] }
entry main (width: i64) (height: i64) (limit: i32) (x0: f32) (y0: f32) (step: f32) : [][]i32 =
  tabulate_2d height width (\row col -> escape limit (x0 + f32.i64 col * step) (y0 + f32.i64 row * step))
