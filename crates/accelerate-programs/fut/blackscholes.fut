-- Black-Scholes option pricing (ICFP'13 Figure 1), as
-- accelerate-programs' `blackscholes.rs` writes it: one `map` of the
-- pricing function, which shares its subexpressions.

def horner (x: f32) : f32 =
  let (c1, c2, c3, c4, c5) = (0.31938153f32, -0.356563782f32, 1.781477937f32, -1.821255978f32, 1.330274429f32)
  in x * (c1 + x * (c2 + x * (c3 + x * (c4 + x * c5))))

def cnd_prime (d: f32) : f32 =
  let k = 1 / (1 + 0.2316419 * f32.abs d)
  in 0.3989422804014327f32 * f32.exp (-0.5 * d * d) * horner k

def cnd (d: f32) : f32 =
  let c = cnd_prime d
  in if d > 0 then 1 - c else c

def callput (price: f32) (strike: f32) (years: f32) : (f32, f32) =
  let r = 0.02f32
  let v = 0.30f32
  let v_sqrtT = v * f32.sqrt years
  let d1 = (f32.log (price / strike) + (r + 0.5 * v * v) * years) / v_sqrtT
  let d2 = d1 - v_sqrtT
  let cndD1 = cnd d1
  let cndD2 = cnd d2
  let x_expRT = strike * f32.exp (-r * years)
  in (price * cndD1 - x_expRT * cndD2, x_expRT * (1 - cndD2) - price * (1 - cndD1))

-- ==
-- input { [5f32, 17.5f32, 30f32, 10f32] [1f32, 20f32, 25f32, 10f32] [0.25f32, 1f32, 5f32, 2f32] }
-- output { [4.004988f32, 1.315225f32, 11.177025f32, 1.850281f32] [0f32, 3.419199f32, 3.797960f32, 1.458175f32] }
entry main (price: []f32) (strike: []f32) (years: []f32) : ([]f32, []f32) =
  unzip (map3 callput price strike years)
