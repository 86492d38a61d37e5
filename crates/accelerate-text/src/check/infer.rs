//! Unification variables and their constraints, unification up to sizes,
//! and the resolution of a type through what has been learnt so far.
//!
//! A variable (`Type::Infer(i)`) is either bound to a type or free with a
//! `Constraint`: the primitive types it may still become (an unsuffixed
//! literal, an overloaded operator), whether it must support `==` (no
//! function in it), and the fields it must have (a projection from a type
//! not known at that point). Binding a variable checks the constraint
//! against the type it is bound to; binding it to another free variable
//! merges the two constraints.
//!
//! Sizes have variables too (Note [Sizes] in `check`): a size the checker
//! has to learn is `Size::Var("?i")`, a name no program can write, and
//! `sizes[i]` is what it has learnt. Unifying two sizes binds a size
//! variable and otherwise does nothing: types are compared up to sizes.
//!
//! Invariant (Note [Normal arrays]): `head` and `zonk` return arrays whose
//! element is never an array, however the element was learnt.

use super::print::show;
use crate::ast::{PrimType, Size, Span, Type};
use std::collections::HashSet;

/// A set of primitive types, one bit per `PrimType::ALL` entry (bit 0
/// `bool`, bits 1-8 the integers, bits 9-11 the floats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PrimSet(u16);

impl PrimSet {
    pub const INTEGRAL: PrimSet = PrimSet(0x1fe);
    pub const FLOAT: PrimSet = PrimSet(0xe00);
    pub const NUMERIC: PrimSet = PrimSet(Self::INTEGRAL.0 | Self::FLOAT.0);
    /// Every primitive type: what `<` and friends accept.
    pub const PRIMITIVE: PrimSet = PrimSet(Self::NUMERIC.0 | 1);
    /// What `!` accepts.
    pub const BOOL_OR_INTEGRAL: PrimSet = PrimSet(Self::INTEGRAL.0 | 1);

    fn bit(p: PrimType) -> u16 {
        1 << PrimType::ALL.iter().position(|&q| q == p).unwrap_or(0)
    }

    pub fn contains(self, p: PrimType) -> bool {
        self.0 & Self::bit(p) != 0
    }

    fn intersect(self, other: PrimSet) -> PrimSet {
        PrimSet(self.0 & other.0)
    }

    /// What a literal or an operator defaults to when nothing else decided
    /// its type: `i32` for integers, `f64` for floats, as in Futhark.
    pub fn default_type(self) -> PrimType {
        [PrimType::I32, PrimType::F64, PrimType::Bool]
            .into_iter()
            .chain(PrimType::ALL)
            .find(|&p| self.contains(p))
            .unwrap_or(PrimType::I32)
    }

    pub fn describe(self) -> String {
        match self {
            Self::INTEGRAL => "an integral type".into(),
            Self::FLOAT => "a floating-point type".into(),
            Self::NUMERIC => "a numeric type".into(),
            Self::PRIMITIVE => "a primitive type".into(),
            Self::BOOL_OR_INTEGRAL => "`bool` or an integral type".into(),
            s => {
                let names: Vec<_> =
                    PrimType::ALL.into_iter().filter(|&p| s.contains(p)).map(|p| format!("`{p}`")).collect();
                format!("one of {}", names.join(", "))
            }
        }
    }
}

/// What a free variable must still satisfy.
#[derive(Clone, Debug, Default)]
pub(super) struct Constraint {
    pub prims: Option<PrimSet>,
    pub equality: bool,
    /// Fields projected from it, with their types and where they were
    /// projected.
    pub fields: Vec<(String, Type, Span)>,
}

#[derive(Clone, Debug)]
struct Var {
    binding: Option<Type>,
    cons: Constraint,
}

/// Why two types do not unify.
#[derive(Clone, Debug)]
pub(super) enum Clash {
    /// Different type constructors somewhere inside.
    Mismatch,
    /// A variable would have to contain itself.
    Occurs,
    /// A constrained variable met a type outside its constraint.
    Constraint { wanted: String, found: String },
    /// A field projected earlier is not in the type the value turned out
    /// to have.
    Field { field: String, ty: Type, span: Span },
}

/// Everything learnt about the unification variables of a program.
#[derive(Debug, Default)]
pub(super) struct Infer {
    vars: Vec<Var>,
    sizes: Vec<Option<Size>>,
    /// The lifted type parameters (`'^a`) in scope: they may stand for
    /// functions, so they do not support `==`.
    pub lifted: HashSet<String>,
    /// While `unify_or_undo` runs: the variables and sizes as they were
    /// before it changed them, most recent last.
    trail: Option<Vec<Undo>>,
}

#[derive(Debug)]
enum Undo {
    Var(u32, Var),
    Size(usize, Option<Size>),
}

/// `[shape]elem`, kept normal: no array of arrays, no array of rank 0.
pub(super) fn mk_array(elem: Type, shape: Vec<Size>) -> Type {
    if shape.is_empty() {
        return elem;
    }
    match elem {
        Type::Array { elem, shape: inner } => {
            Type::Array { elem, shape: shape.into_iter().chain(inner).collect() }
        }
        elem => Type::Array { elem: Box::new(elem), shape },
    }
}

/// The index of a size variable of the checker (`?i`).
pub(super) fn size_var(s: &Size) -> Option<usize> {
    match s {
        Size::Var(v) => v.strip_prefix('?')?.parse().ok(),
        _ => None,
    }
}

impl Infer {
    pub fn var_count(&self) -> usize {
        self.vars.len()
    }

    pub fn fresh_with(&mut self, cons: Constraint) -> Type {
        self.vars.push(Var { binding: None, cons });
        Type::Infer(self.vars.len() as u32 - 1)
    }

    pub fn fresh(&mut self) -> Type {
        self.fresh_with(Constraint::default())
    }

    pub fn fresh_prims(&mut self, prims: PrimSet) -> Type {
        self.fresh_with(Constraint { prims: Some(prims), ..Constraint::default() })
    }

    pub fn fresh_size(&mut self) -> Size {
        self.sizes.push(None);
        Size::Var(format!("?{}", self.sizes.len() - 1))
    }

    fn var(&self, v: u32) -> &Var {
        &self.vars[v as usize]
    }

    fn var_mut(&mut self, v: u32) -> &mut Var {
        if let Some(trail) = &mut self.trail {
            trail.push(Undo::Var(v, self.vars[v as usize].clone()));
        }
        &mut self.vars[v as usize]
    }

    /// The constraint of a free variable.
    pub fn constraint(&self, v: u32) -> &Constraint {
        &self.var(v).cons
    }

    pub fn is_free(&self, v: u32) -> bool {
        self.var(v).binding.is_none()
    }

    /// Binds a free variable to a type that satisfies its constraint by
    /// construction (a default, a type parameter).
    pub fn set(&mut self, v: u32, ty: Type) {
        self.var_mut(v).binding = Some(ty);
    }

    /// The outermost constructor, through bound variables, arrays normal.
    pub fn head(&self, t: &Type) -> Type {
        match t {
            Type::Infer(v) => match &self.var(*v).binding {
                Some(b) => self.head(b),
                None => t.clone(),
            },
            Type::Array { elem, shape } => mk_array(self.head(elem), shape.clone()),
            _ => t.clone(),
        }
    }

    fn size_head(&self, s: &Size) -> Size {
        match size_var(s).and_then(|i| self.sizes.get(i)) {
            Some(Some(b)) => self.size_head(b),
            _ => s.clone(),
        }
    }

    /// The type with everything learnt so far substituted; free variables
    /// stay.
    pub fn zonk(&self, t: &Type) -> Type {
        match t {
            Type::Infer(v) => match &self.var(*v).binding {
                Some(b) => self.zonk(b),
                None => t.clone(),
            },
            Type::Array { elem, shape } => {
                mk_array(self.zonk(elem), shape.iter().map(|s| self.size_head(s)).collect())
            }
            Type::Tuple(ts) => Type::Tuple(ts.iter().map(|t| self.zonk(t)).collect()),
            Type::Record(fs) => Type::Record(fs.iter().map(|(n, t)| (n.clone(), self.zonk(t))).collect()),
            Type::Arrow(a, b) => Type::Arrow(Box::new(self.zonk(a)), Box::new(self.zonk(b))),
            Type::Unknown | Type::Prim(_) | Type::Param(_) => t.clone(),
        }
    }

    /// The type as a message shows it.
    pub fn show(&self, t: &Type) -> String {
        show(&self.zonk(t))
    }

    /// `unify`, leaving everything as it was if the two do not unify, so
    /// that the error can show the types as they were.
    pub fn unify_or_undo(&mut self, a: &Type, b: &Type) -> Result<(), Clash> {
        self.trail = Some(Vec::new());
        let r = self.unify(a, b);
        let trail = self.trail.take().unwrap_or_default();
        if r.is_err() {
            for undo in trail.into_iter().rev() {
                match undo {
                    Undo::Var(v, old) => self.vars[v as usize] = old,
                    Undo::Size(i, old) => self.sizes[i] = old,
                }
            }
        }
        r
    }

    /// Unifies two types, up to sizes (a size variable is bound, two known
    /// sizes are left to the run-time checks).
    pub fn unify(&mut self, a: &Type, b: &Type) -> Result<(), Clash> {
        let (a, b) = (self.head(a), self.head(b));
        match (&a, &b) {
            (Type::Infer(x), Type::Infer(y)) if x == y => Ok(()),
            (Type::Infer(x), _) => self.bind(*x, &b, true),
            (_, Type::Infer(y)) => self.bind(*y, &a, false),
            (Type::Prim(p), Type::Prim(q)) if p == q => Ok(()),
            (Type::Param(p), Type::Param(q)) if p == q => Ok(()),
            (Type::Array { elem: e1, shape: s1 }, Type::Array { elem: e2, shape: s2 }) => {
                let n = s1.len().min(s2.len());
                for (x, y) in s1.iter().zip(s2) {
                    self.unify_size(x, y);
                }
                // Note [Normal arrays]: the array of lower rank has a
                // variable for its element, which takes the other's inner
                // dimensions (`[n]?a` against `[n][m]f32` binds
                // `?a := [m]f32`); were its element known, it would not be
                // an array, and the two clash.
                let e1 = mk_array((**e1).clone(), s1[n..].to_vec());
                let e2 = mk_array((**e2).clone(), s2[n..].to_vec());
                self.unify(&e1, &e2)
            }
            (Type::Tuple(xs), Type::Tuple(ys)) if xs.len() == ys.len() => {
                xs.iter().zip(ys).try_for_each(|(x, y)| self.unify(x, y))
            }
            (Type::Record(xs), Type::Record(ys))
                if xs.len() == ys.len() && xs.iter().zip(ys).all(|((m, _), (n, _))| m == n) =>
            {
                xs.iter().zip(ys).try_for_each(|((_, x), (_, y))| self.unify(x, y))
            }
            (Type::Arrow(a1, b1), Type::Arrow(a2, b2)) => {
                self.unify(a1, a2)?;
                self.unify(b1, b2)
            }
            _ => Err(Clash::Mismatch),
        }
    }

    pub fn unify_size(&mut self, a: &Size, b: &Size) {
        let (a, b) = (self.size_head(a), self.size_head(b));
        if a == b {
            return;
        }
        // a `?i` the checker did not make (a tree built by hand) is left
        // alone rather than trusted as an index
        let (i, s) = match (size_var(&a), size_var(&b)) {
            (Some(i), _) if i < self.sizes.len() => (i, b),
            (_, Some(j)) if j < self.sizes.len() => (j, a),
            _ => return,
        };
        if let Some(trail) = &mut self.trail {
            trail.push(Undo::Size(i, self.sizes[i].clone()));
        }
        self.sizes[i] = Some(s);
    }

    /// Binds the free variable `v` to `t` (normal at its head, not `v`);
    /// `v_expected`: `v` came from the expected type, which orders a
    /// constraint's message.
    fn bind(&mut self, v: u32, t: &Type, v_expected: bool) -> Result<(), Clash> {
        if let Type::Infer(w) = t {
            let cons = std::mem::take(&mut self.var_mut(v).cons);
            self.var_mut(v).binding = Some(t.clone());
            return self.add_constraint(*w, cons, v_expected);
        }
        if self.occurs(v, t) {
            return Err(Clash::Occurs);
        }
        let cons = std::mem::take(&mut self.var_mut(v).cons);
        self.var_mut(v).binding = Some(t.clone());
        self.enforce(cons, t, v_expected)
    }

    /// Adds `cons`, the constraint of a variable just bound to the free
    /// variable `w`, to `w`'s.
    fn add_constraint(&mut self, w: u32, cons: Constraint, v_expected: bool) -> Result<(), Clash> {
        let v_has_prims = cons.prims.is_some();
        let cur = &mut self.var_mut(w).cons;
        match (cur.prims, cons.prims) {
            (Some(p), Some(q)) => {
                let both = p.intersect(q);
                if both.0 == 0 {
                    return Err(oriented(v_expected, q.describe(), p.describe()));
                }
                cur.prims = Some(both);
            }
            (None, q) => cur.prims = q,
            (Some(_), None) => {}
        }
        cur.equality |= cons.equality;
        let mut same = Vec::new();
        for (f, t, s) in cons.fields {
            match cur.fields.iter().find(|(g, _, _)| *g == f) {
                Some((_, u, _)) => same.push((u.clone(), t)),
                None => cur.fields.push((f, t, s)),
            }
        }
        if let (Some(p), false) = (cur.prims, cur.fields.is_empty()) {
            let (prims, record) = (p.describe(), "a record".to_string());
            return Err(match v_has_prims {
                true => oriented(v_expected, prims, record),
                false => oriented(v_expected, record, prims),
            });
        }
        same.iter().try_for_each(|(u, t)| self.unify(u, t))
    }

    /// Checks a variable's constraint against the type it was bound to
    /// (normal at its head, not a variable).
    fn enforce(&mut self, cons: Constraint, t: &Type, v_expected: bool) -> Result<(), Clash> {
        if let Some(ps) = cons.prims {
            if !matches!(t, Type::Prim(p) if ps.contains(*p)) {
                return Err(oriented(v_expected, ps.describe(), format!("`{}`", self.show(t))));
            }
        }
        if cons.equality {
            self.require_equality(t)?;
        }
        for (f, fty, span) in cons.fields {
            match self.field_of(t, &f) {
                Some(actual) => self.unify(&fty, &actual)?,
                None => return Err(Clash::Field { field: f, ty: t.clone(), span }),
            }
        }
        Ok(())
    }

    /// `==` needs a type without functions; free variables inside learn
    /// that they may not become functions.
    pub fn require_equality(&mut self, t: &Type) -> Result<(), Clash> {
        match self.head(t) {
            Type::Infer(w) => {
                self.var_mut(w).cons.equality = true;
                Ok(())
            }
            Type::Arrow(..) => Err(Clash::Constraint {
                wanted: "a type that supports `==` (no functions in it)".into(),
                found: format!("`{}`", self.show(t)),
            }),
            Type::Param(p) if self.lifted.contains(&p) => Err(Clash::Constraint {
                wanted: "a type that supports `==` (no functions in it)".into(),
                found: format!("the lifted type parameter `{p}`, which may be a function"),
            }),
            Type::Array { elem, .. } => self.require_equality(&elem),
            Type::Tuple(ts) => ts.iter().try_for_each(|t| self.require_equality(t)),
            Type::Record(fs) => fs.iter().try_for_each(|(_, t)| self.require_equality(t)),
            Type::Prim(_) | Type::Param(_) | Type::Unknown => Ok(()),
        }
    }

    /// The type of field `f` of a record, or of element `f` of a tuple
    /// (`t` normal at its head).
    pub fn field_of(&self, t: &Type, f: &str) -> Option<Type> {
        match t {
            Type::Record(fs) => fs.iter().find(|(n, _)| n == f).map(|(_, t)| t.clone()),
            Type::Tuple(ts) => ts.get(f.parse::<usize>().ok()?).cloned(),
            _ => None,
        }
    }

    /// The type of field `f` of a value of type `t`, when `t` is not known
    /// yet: a variable for it, remembered in `t`'s constraint. `None` when
    /// `t` is known (the caller looks the field up) or cannot have fields.
    pub fn project_free(&mut self, t: &Type, f: &str, span: Span) -> Result<Option<Type>, Clash> {
        let Type::Infer(w) = self.head(t) else { return Ok(None) };
        if let Some((_, ty, _)) = self.var(w).cons.fields.iter().find(|(g, _, _)| g == f) {
            return Ok(Some(ty.clone()));
        }
        if let Some(ps) = self.var(w).cons.prims {
            return Err(Clash::Constraint { wanted: ps.describe(), found: "a record".into() });
        }
        let ty = self.fresh();
        self.var_mut(w).cons.fields.push((f.to_string(), ty.clone(), span));
        Ok(Some(ty))
    }

    fn occurs(&self, v: u32, t: &Type) -> bool {
        match t {
            Type::Infer(w) => *w == v || self.var(*w).binding.as_ref().is_some_and(|b| self.occurs(v, b)),
            Type::Array { elem, .. } => self.occurs(v, elem),
            Type::Tuple(ts) => ts.iter().any(|t| self.occurs(v, t)),
            Type::Record(fs) => fs.iter().any(|(_, t)| self.occurs(v, t)),
            Type::Arrow(a, b) => self.occurs(v, a) || self.occurs(v, b),
            Type::Unknown | Type::Prim(_) | Type::Param(_) => false,
        }
    }

    /// The free variables of a type, in the order they appear, each once.
    pub fn free_vars(&self, t: &Type) -> Vec<u32> {
        fn go(t: &Type, out: &mut Vec<u32>) {
            match t {
                Type::Infer(v) => {
                    if !out.contains(v) {
                        out.push(*v)
                    }
                }
                Type::Array { elem, .. } => go(elem, out),
                Type::Tuple(ts) => ts.iter().for_each(|t| go(t, out)),
                Type::Record(fs) => fs.iter().for_each(|(_, t)| go(t, out)),
                Type::Arrow(a, b) => {
                    go(a, out);
                    go(b, out)
                }
                Type::Unknown | Type::Prim(_) | Type::Param(_) => {}
            }
        }
        let mut out = Vec::new();
        go(&self.zonk(t), &mut out);
        out
    }

    /// The type of a branching construct whose branches have types `a`
    /// and `b` (already unified): a size the two disagree on is not known
    /// statically (Note [Sizes]).
    pub fn join(&self, a: &Type, b: &Type) -> Type {
        fn go(a: &Type, b: &Type) -> Type {
            match (a, b) {
                (Type::Array { elem: e1, shape: s1 }, Type::Array { elem: e2, shape: s2 })
                    if s1.len() == s2.len() =>
                {
                    let shape =
                        s1.iter().zip(s2).map(|(x, y)| if x == y { x.clone() } else { Size::Any }).collect();
                    mk_array(go(e1, e2), shape)
                }
                (Type::Tuple(xs), Type::Tuple(ys)) if xs.len() == ys.len() => {
                    Type::Tuple(xs.iter().zip(ys).map(|(x, y)| go(x, y)).collect())
                }
                (Type::Record(xs), Type::Record(ys)) if xs.len() == ys.len() => {
                    Type::Record(xs.iter().zip(ys).map(|((n, x), (_, y))| (n.clone(), go(x, y))).collect())
                }
                (Type::Arrow(a1, b1), Type::Arrow(a2, b2)) => {
                    Type::Arrow(Box::new(go(a1, a2)), Box::new(go(b1, b2)))
                }
                (a, b) if a == b => a.clone(),
                (a, _) => forget_sizes(a),
            }
        }
        go(&self.zonk(a), &self.zonk(b))
    }

    /// The type with every size forgotten, its variables kept.
    pub fn without_sizes(&self, t: &Type) -> Type {
        forget_sizes(&self.zonk(t))
    }
}

/// A constraint's clash, worded from the expected side: `var_side`
/// describes the constrained variable, `other` what it met.
fn oriented(v_expected: bool, var_side: String, other: String) -> Clash {
    match v_expected {
        true => Clash::Constraint { wanted: var_side, found: other },
        false => Clash::Constraint { wanted: other, found: var_side },
    }
}

fn forget_sizes(t: &Type) -> Type {
    match t {
        Type::Array { elem, shape } => mk_array(forget_sizes(elem), vec![Size::Any; shape.len()]),
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(forget_sizes).collect()),
        Type::Record(fs) => Type::Record(fs.iter().map(|(n, t)| (n.clone(), forget_sizes(t))).collect()),
        Type::Arrow(a, b) => Type::Arrow(Box::new(forget_sizes(a)), Box::new(forget_sizes(b))),
        t => t.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prim(p: PrimType) -> Type {
        Type::Prim(p)
    }

    #[test]
    fn an_element_variable_takes_the_inner_dimensions() {
        let mut inf = Infer::default();
        let a = inf.fresh();
        let n = Size::Var("n".into());
        let m = Size::Var("m".into());
        let rows = mk_array(a.clone(), vec![n.clone()]);
        let matrix = mk_array(prim(PrimType::F32), vec![n.clone(), m.clone()]);
        inf.unify(&rows, &matrix).unwrap();
        assert_eq!(inf.zonk(&a), mk_array(prim(PrimType::F32), vec![m]));
        assert_eq!(inf.zonk(&rows), matrix);
    }

    #[test]
    fn constraints_meet_and_clash() {
        let mut inf = Infer::default();
        let lit = inf.fresh_prims(PrimSet::NUMERIC);
        let float = inf.fresh_prims(PrimSet::FLOAT);
        inf.unify(&lit, &float).unwrap();
        inf.unify(&lit, &prim(PrimType::F32)).unwrap();
        assert_eq!(inf.zonk(&float), prim(PrimType::F32));
        let other = inf.fresh_prims(PrimSet::FLOAT);
        assert!(matches!(inf.unify(&other, &prim(PrimType::I32)), Err(Clash::Constraint { .. })));
        let not = inf.fresh_prims(PrimSet::BOOL_OR_INTEGRAL);
        assert!(matches!(inf.unify(&not, &float), Err(Clash::Constraint { .. })));
        let not2 = inf.fresh_prims(PrimSet::BOOL_OR_INTEGRAL);
        let float2 = inf.fresh_prims(PrimSet::FLOAT);
        assert!(matches!(inf.unify(&not2, &float2), Err(Clash::Constraint { .. })));
    }

    #[test]
    fn a_failed_unification_leaves_the_variables_as_they_were() {
        let mut inf = Infer::default();
        let (a, b) = (inf.fresh(), inf.fresh_prims(PrimSet::NUMERIC));
        let k = inf.fresh_size();
        let left = Type::Tuple(vec![a.clone(), mk_array(b.clone(), vec![k.clone()])]);
        let right =
            Type::Tuple(vec![prim(PrimType::I32), mk_array(prim(PrimType::Bool), vec![Size::Const(2)])]);
        assert!(inf.unify_or_undo(&left, &right).is_err());
        assert_eq!(inf.zonk(&left), left);
        inf.unify_or_undo(&b, &prim(PrimType::F32)).unwrap();
        assert_eq!(inf.zonk(&b), prim(PrimType::F32));
    }

    #[test]
    fn a_type_may_not_contain_itself() {
        let mut inf = Infer::default();
        let a = inf.fresh();
        let arr = mk_array(a.clone(), vec![Size::Any]);
        assert!(matches!(inf.unify(&a, &arr), Err(Clash::Occurs)));
    }

    #[test]
    fn a_size_variable_learns_the_size_it_meets() {
        let mut inf = Infer::default();
        let k = inf.fresh_size();
        let x = mk_array(prim(PrimType::I32), vec![k]);
        let y = mk_array(prim(PrimType::I32), vec![Size::Const(3)]);
        inf.unify(&x, &y).unwrap();
        assert_eq!(inf.zonk(&x), y);
    }
}
