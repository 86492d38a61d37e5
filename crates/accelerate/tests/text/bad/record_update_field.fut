-- `with` names a field the record does not have
-- ==
-- error: field
entry main (a: i32) =
  let r = {x = a, y = a}
  in (r with z = 1).x
