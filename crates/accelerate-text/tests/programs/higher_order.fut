-- Higher-order functions: twice, composition, partial application,
-- pipelines and sections.
def twice 'a (f: a -> a) (x: a): a = f (f x)

def compose '^a '^b '^c (f: b -> c) (g: a -> b): a -> c = \x -> f (g x)

def add (x: i32) (y: i32) = x + y

def inc = add 1

def apply_n 'a (n: i32) (f: a -> a) (x: a): a =
  loop y = x for _i < n do f y

entry main (xs: []i32): i32 =
  let g = twice (twice inc) >-> (* 2)
  let h = (+ 1) <-< compose inc (add 2)
  let ys = xs |> map g |> map h
  let k = \(x: i32) : i32 -> x `add` apply_n 3 inc x
  in reduce (+) 0 ys + foldl (\acc x -> acc `add` k x) 0 ys
