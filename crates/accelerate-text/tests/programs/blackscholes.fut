-- Black-Scholes option pricing.
def cnd (x: f64): f64 =
  let a1 = 0.31938153
  let a2 = -0.356563782
  let a3 = 1.781477937
  let a4 = -1.821255978
  let a5 = 1.330274429
  let k = 1.0 / (1.0 + 0.2316419 * f64.abs x)
  let w = 1.0 - 1.0 / f64.sqrt (2.0 * f64.pi) * f64.exp (-x * x / 2.0)
          * (a1 * k + a2 * k ** 2.0 + a3 * k ** 3.0 + a4 * k ** 4.0 + a5 * k ** 5.0)
  in if x < 0.0 then 1.0 - w else w

def black_scholes (call: bool) (s: f64) (x: f64) (t: f64) (r: f64) (v: f64): f64 =
  let d1 = (f64.log (s / x) + (r + v * v / 2.0) * t) / (v * f64.sqrt t)
  let d2 = d1 - v * f64.sqrt t
  in if call
     then s * cnd d1 - x * f64.exp (-r * t) * cnd d2
     else x * f64.exp (-r * t) * cnd (-d2) - s * cnd (-d1)

entry main [n] (calls: [n]bool) (prices: [n]f64) (strikes: [n]f64) (years: [n]f64): [n]f64 =
  map4 (\c s x t -> black_scholes c s x t 0.02 0.30) calls prices strikes years
