-- TFP'18: a type parameter written 'a may not stand for a function type;
-- only '^a may.
-- ==
-- error: restriction
def choose 'a (b: bool) (x: a) (y: a) : a = if b then x else y

entry main (b: bool) = (choose b (\x -> x + 1) (\x -> x - 1)) 3i32
